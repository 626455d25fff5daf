//! Parse analysis: from pg_query's raw parse tree to a typed [`Statement`].
//! Names are resolved against the catalog (with a catalog snapshot: the
//! statement's in READ COMMITTED, else the catalogs' latest state),
//! expressions typed, unknown literals and `$n` parameters given types from
//! context, and implicit casts between the integer types made explicit.
//! Anything not handled is 0A000, never a guess.

use crate::catalog::{self, Column, Table};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use ferrogres_datum::types::{self, CastContext, Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::IsolationLevel;
use pg_query::protobuf::{self as pb, a_const::Val};
use pg_query::NodeEnum;

mod agg_level;
mod agg_order;
mod arrays;
mod whole_row;
mod row_compare;
mod catalog_funcs;
mod exprs;
pub(crate) mod from;
mod funcs;
mod group_by;
mod grouping_sets;
mod index_ddl;
mod ddl_alter;
pub(crate) mod ddl_alter_column;
mod ddl_create;
mod create_as;
mod setop;
mod sublink;
mod numeric_fn;
mod variadic;
pub(crate) mod view;
pub(crate) mod sqlfunc;
mod window;
mod dml_join;
mod on_conflict;
mod view_dml;
mod cte_dml;
mod interval_typmod;

pub struct Analyzer<'a> {
    pub backend: &'a Backend,
    pub snap: &'a Snapshot,
    pub sql: &'a str,
    /// Parameter types: given by the client (Parse) or inferred here; `None` until known.
    pub params: Vec<Option<Type>>,
    /// `$n` may appear (extended protocol); a simple query has no parameters.
    pub params_allowed: bool,
    /// How view references are read ([`view`]).
    pub views: view::ViewContext,
    /// Aggregates and column references of enclosing query levels not yet
    /// claimed by their level ([`agg_level`]).
    pub(crate) upper: agg_level::Upper,
    /// The planner's settings (the session's, when it analyses).
    pub planner: crate::optimizer::PlannerSettings,
    /// The first error raised by constant folding
    /// ([`crate::optimizer::fold`]); [`Analyzer::statement`] raises it for
    /// a statement planned to run, not for a view or function definition.
    pub fold_error: Option<SqlError>,
}

/// What column references can see.
struct Scope<'t> {
    table: Option<(&'t Table, String)>,
    /// Collecting aggregates (target list / ORDER BY of a query): `Some`.
    aggs: Option<Vec<Aggregate>>,
    /// Inside an aggregate's argument.
    in_agg: bool,
    /// Location of the first column reference outside any aggregate.
    bare_column: Option<(i32, String)>,
    /// Every column reference outside aggregates while collecting them:
    /// (location, "refname.column", column number), for GROUP BY's 42803.
    seen_columns: Vec<(i32, String, usize)>,
    /// A FROM of several items, joins, subqueries or CTEs ([`from`]): columns
    /// resolve here instead of through `table`.
    ns: Option<std::rc::Rc<from::Namespace>>,
    /// The namespaces of the enclosing query levels, innermost last.
    outer: Vec<std::rc::Rc<from::Namespace>>,
    /// Set-returning functions are refused here (the clause named: "WHERE").
    no_srf: Option<&'static str>,
    /// Window functions: collected (target list, ORDER BY) or refused ([`window`]).
    windows: window::Windows,
    /// GROUPING(...) calls met so far (`Func::Grouping(n)`): their arguments'
    /// locations ([`grouping_sets`]).
    grouping_locs: Vec<Vec<i32>>,
    /// Where aggregates are refused (`aggs` is `None`), the clause named in
    /// the error ("JOIN conditions", "UPDATE", ...); `None`: WHERE, or "this
    /// context" without FROM.
    agg_place: Option<&'static str>,
    /// Columns of this level read by subqueries, outside aggregates of this
    /// level, while collecting aggregates: (location, name, column), checked
    /// against the grouping ([`agg_level`], rule 4).
    sub_columns: Vec<(i32, String, usize)>,
    /// References to `table`'s columns are reads the statement makes: each is
    /// recorded for the column privilege check (not in a CHECK constraint's
    /// or a column default's expression).
    reads: bool,
}

impl<'t> Scope<'t> {
    fn new(table: Option<(&'t Table, String)>) -> Scope<'t> {
        Scope {
            table,
            aggs: None,
            in_agg: false,
            bare_column: None,
            seen_columns: Vec::new(),
            ns: None,
            outer: Vec::new(),
            no_srf: None,
            windows: window::Windows::default(),
            grouping_locs: Vec::new(),
            agg_place: None,
            sub_columns: Vec::new(),
            reads: false,
        }
    }

    /// A scope over `table`'s row whose column references the statement reads.
    fn reading(table: &'t Table, refname: String) -> Scope<'t> {
        let mut s = Scope::new(Some((table, refname)));
        s.reads = true;
        s
    }
}

/// Whether `sql` holds a system column's name (ASCII case-insensitively): a
/// cheap superset of the statements that reference one.
fn names_system_column(sql: &str) -> bool {
    let b = sql.as_bytes();
    crate::rowio::SYSTEM_COLUMNS.iter().any(|(name, _)| b.windows(name.len()).any(|w| w.eq_ignore_ascii_case(name.as_bytes())))
}

fn node(n: &Option<Box<pb::Node>>) -> Option<&NodeEnum> {
    n.as_ref().and_then(|n| n.node.as_ref())
}

fn str_of(n: &pb::Node) -> Option<&str> {
    match n.node.as_ref()? {
        NodeEnum::String(s) => Some(&s.sval),
        _ => None,
    }
}

/// The parse location of an expression node (-1 if it has none).
pub(crate) fn node_location(n: &NodeEnum) -> i32 {
    location(n)
}

/// A node's kind as its Debug output names it (`AIndirection`), without
/// formatting the subtree below it (as deep as the input is nested).
fn node_kind(n: &NodeEnum) -> String {
    /// Keeps what is written before the first '(' and stops the formatting there.
    struct Name(String);
    impl std::fmt::Write for Name {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            match s.find('(') {
                Some(i) => {
                    self.0.push_str(&s[..i]);
                    Err(std::fmt::Error)
                }
                None => {
                    self.0.push_str(s);
                    Ok(())
                }
            }
        }
    }
    let mut w = Name(String::new());
    let _ = std::fmt::Write::write_fmt(&mut w, format_args!("{n:?}"));
    w.0
}

fn location(n: &NodeEnum) -> i32 {
    match n {
        NodeEnum::ColumnRef(c) => c.location,
        NodeEnum::AConst(c) => c.location,
        NodeEnum::AExpr(e) => e.location,
        NodeEnum::FuncCall(f) => f.location,
        NodeEnum::TypeCast(t) => t.location,
        NodeEnum::ParamRef(p) => p.location,
        NodeEnum::BoolExpr(b) => b.location,
        NodeEnum::NullTest(n) => n.location,
        NodeEnum::ResTarget(r) => r.location,
        NodeEnum::RangeVar(r) => r.location,
        _ => -1,
    }
}

fn is_type(t: Type, want: Type) -> bool {
    t == want || (want == Type::Text && t.is_string())
}

fn isolation_from(s: &str) -> Result<IsolationLevel> {
    Ok(match s {
        "read committed" | "read uncommitted" => IsolationLevel::ReadCommitted,
        "repeatable read" => IsolationLevel::RepeatableRead,
        // Runs as REPEATABLE READ for now (no SSI predicate locks: txn README).
        "serializable" => IsolationLevel::Serializable,
        other => return Err(SqlError::new(b"22023", format!("invalid value for parameter \"transaction_isolation\": \"{other}\""))),
    })
}

fn txn_options(opts: &[pb::Node]) -> Result<(Option<IsolationLevel>, crate::plan::TxnModes)> {
    let mut iso = None;
    let mut modes = crate::plan::TxnModes::default();
    for o in opts {
        if let Some(NodeEnum::DefElem(d)) = &o.node {
            let flag = || match node(&d.arg) {
                Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), .. })) => Some(i.ival != 0),
                Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Boolval(b)), .. })) => Some(b.boolval),
                _ => None,
            };
            match d.defname.as_str() {
                "transaction_isolation" => {
                    if let Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Sval(s)), .. })) = node(&d.arg) {
                        iso = Some(isolation_from(&s.sval)?);
                    }
                }
                "transaction_read_only" => modes.read_only = flag(),
                "transaction_deferrable" => modes.deferrable = flag(),
                other => return Err(SqlError::not_supported(format!("transaction option {other}"))),
            }
        }
    }
    Ok((iso, modes))
}

/// A setting's value as SET writes it: words, numbers and strings joined by ", ".
pub(crate) fn set_value_text(args: &[pb::Node]) -> Result<String> {
    set_value(args)
}

fn set_value(args: &[pb::Node]) -> Result<String> {
    let mut parts = Vec::new();
    for a in args {
        match a.node.as_ref() {
            Some(NodeEnum::AConst(c)) => parts.push(match &c.val {
                Some(Val::Sval(s)) => s.sval.clone(),
                Some(Val::Ival(i)) => i.ival.to_string(),
                Some(Val::Fval(f)) => f.fval.clone(),
                Some(Val::Boolval(b)) => if b.boolval { "on" } else { "off" }.to_string(),
                _ => return Err(SqlError::not_supported("this SET value")),
            }),
            Some(NodeEnum::TypeCast(_)) => return Err(SqlError::not_supported("typed SET values")),
            _ => return Err(SqlError::not_supported("this SET value")),
        }
    }
    Ok(parts.join(", "))
}

impl Analyzer<'_> {
    /// pg_listening_channels(): the channels this session listens on
    /// (committed LISTENs, from the engine's queue), read now, as the rows of
    /// `jsonb_array_elements_text` over a constant (the select list has no
    /// array unnest); a LISTEN or UNLISTEN commit makes the session's plans
    /// stale (`crate::notify`).
    fn listening_channels(&mut self, scope: &mut Scope) -> Result<Expr> {
        let chans = self.backend.engine().notify.channels(self.backend.id().0);
        let json_str = |c: &str| {
            let mut out = String::from("\"");
            for ch in c.chars() {
                match ch {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        };
        let items: Vec<String> = chans.iter().map(String::as_str).map(json_str).collect();
        let lit = format!("[{}]", items.join(",")).replace('\'', "''");
        let parsed = crate::parser::parse(&format!("SELECT pg_catalog.jsonb_array_elements_text('{lit}'::pg_catalog.jsonb)"))?;
        let call = parsed.first().and_then(|p| match &p.node {
            NodeEnum::SelectStmt(s) => s.target_list.first().and_then(|t| match t.node.as_ref() {
                Some(NodeEnum::ResTarget(rt)) => match node(&rt.val) {
                    Some(NodeEnum::FuncCall(f)) => Some((**f).clone()),
                    _ => None,
                },
                _ => None,
            }),
            _ => None,
        });
        let call = call.ok_or_else(|| SqlError::internal("pg_listening_channels: no unnest call"))?;
        self.func_call(&call, scope)
    }
}

/// PostgreSQL's 42601 for a column reference of more than four names.
pub(crate) fn improper_qualified_name(names: &[&str]) -> SqlError {
    SqlError::new(b"42601", format!("improper qualified name (too many dotted names): {}", names.join(".")))
}

impl<'a> Analyzer<'a> {
    pub(crate) fn err_at(&self, e: SqlError, loc: i32) -> SqlError {
        e.at(self.sql, loc)
    }

    /// `schema.table.column` and `database.schema.table.column` as PostgreSQL
    /// reads them: the column of the FROM item named `table` (a database other
    /// than the current one is 0A000 "cross-database references are not
    /// implemented"). The schema is not compared with the FROM item's: a FROM
    /// item is found by its name (PostgreSQL also requires its schema to match).
    pub(crate) fn strip_column_qualifiers<'n>(&self, names: Vec<&'n str>, loc: i32) -> Result<Vec<&'n str>> {
        match names.len() {
            3 => Ok(names[1..].to_vec()),
            4 => {
                let db = crate::database::current_name(self.backend, self.snap)?;
                if names[0] != db {
                    return Err(self.err_at(
                        SqlError::new(b"0A000", format!("cross-database references are not implemented: {}", names.join("."))),
                        loc,
                    ));
                }
                Ok(names[2..].to_vec())
            }
            _ => Ok(names),
        }
    }

    /// Analyzes (and, for a query, plans) one statement. An error of
    /// constant folding is raised here, as PostgreSQL raises it when it
    /// plans, except for a view or function definition, which is not planned.
    pub fn statement(&mut self, stmt: &NodeEnum) -> Result<Statement> {
        let st = self.statement_unfolded(stmt);
        let folded_error = self.fold_error.take();
        let st = st?;
        match folded_error {
            Some(e) if !matches!(stmt, NodeEnum::ViewStmt(_) | NodeEnum::CreateFunctionStmt(_)) => Err(e),
            _ => Ok(st),
        }
    }

    fn statement_unfolded(&mut self, stmt: &NodeEnum) -> Result<Statement> {
        if let Some(st) = self.view_dml_hook(stmt)? {
            return Ok(st);
        }
        if let Some(st) = self.with_dml_hook(stmt)? {
            return Ok(st);
        }
        match stmt {
            NodeEnum::ViewStmt(s) => self.create_view(s),
            NodeEnum::CreateFunctionStmt(s) => self.create_function(s),
            NodeEnum::DropStmt(s) if s.remove_type == pb::ObjectType::ObjectFunction as i32 => self.drop_function(s),
            NodeEnum::DropStmt(s)
                if s.remove_type == pb::ObjectType::ObjectView as i32
                    || (s.remove_type == pb::ObjectType::ObjectTable as i32 && s.behavior == pb::DropBehavior::DropCascade as i32) =>
            {
                self.drop_view(s)
            }
            NodeEnum::SelectStmt(s) if create_as::select_into_clause(s).is_some() => {
                self.select_into(s)?.ok_or_else(|| SqlError::internal("SELECT INTO analysis"))
            }
            NodeEnum::CreateTableAsStmt(s) => self.create_table_as(s),
            NodeEnum::SelectStmt(s) if !s.locking_clause.is_empty() => crate::locking::analyze_locking_select(self, s),
            NodeEnum::SelectStmt(s) => {
                let mut q = self.select(s)?;
                // A read-only statement: its scans deform only the columns it reads.
                crate::optimizer::projection::project_statement(&mut q);
                Ok(Statement::Query(q))
            }
            NodeEnum::InsertStmt(s) => self.insert(s),
            NodeEnum::DeleteStmt(s) => self.delete(s),
            NodeEnum::UpdateStmt(s) => self.update(s),
            NodeEnum::MergeStmt(s) => self.merge(s),
            NodeEnum::CreateStmt(s) => self.create(s),
            NodeEnum::DropStmt(s) if s.remove_type == pb::ObjectType::ObjectExtension as i32 => crate::utility::analyze_drop_extension(s),
            NodeEnum::CreateExtensionStmt(s) => crate::utility::analyze_create_extension(s),
            NodeEnum::DropStmt(s) => self.drop(s),
            NodeEnum::IndexStmt(s) => self.create_index(s),
            NodeEnum::ReindexStmt(s) => self.reindex(s),
            NodeEnum::AlterTableStmt(s) if crate::grant::owner_change(s).is_some() => {
                Ok(Statement::Owner(Box::new(crate::grant::owner_change(s).expect("checked"))))
            }
            NodeEnum::AlterTableStmt(s) if ddl_alter_column::handles(s) => self.alter_columns(s),
            // Schemas, databases and roles have their own RENAME arms below.
            NodeEnum::RenameStmt(s)
                if s.rename_type != pb::ObjectType::ObjectSchema as i32
                    && s.rename_type != pb::ObjectType::ObjectDatabase as i32
                    && s.rename_type != pb::ObjectType::ObjectRole as i32 =>
            {
                self.rename(s)
            }
            NodeEnum::AlterTableStmt(s) if ddl_alter::added_constraint(s).is_some() => {
                self.alter_add_constraint(s, ddl_alter::added_constraint(s).expect("checked"))
            }
            NodeEnum::AlterTableStmt(s) => self.alter_table(s),
            NodeEnum::TruncateStmt(s) => self.truncate(s),
            NodeEnum::VacuumStmt(s) => self.vacuum(s),
            NodeEnum::CheckPointStmt(_) => Ok(Statement::Checkpoint),
            NodeEnum::AlterSystemStmt(s) => Ok(Statement::AlterSystem(crate::alter_system::analyze(s, |v| {
                if v.name.eq_ignore_ascii_case("search_path") {
                    crate::namespace::set_value(&v.args)
                } else {
                    set_value(&v.args)
                }
            })?)),
            NodeEnum::DiscardStmt(d) => crate::utility::analyze_discard(d),
            NodeEnum::ClosePortalStmt(c) => Ok(crate::utility::analyze_close(c)),
            NodeEnum::ListenStmt(s) => Ok(crate::notify::analyze_listen(s)),
            NodeEnum::UnlistenStmt(s) => Ok(crate::notify::analyze_unlisten(s)),
            NodeEnum::NotifyStmt(s) => Ok(crate::notify::analyze_notify(s)),
            NodeEnum::ExplainStmt(s) => crate::explain::analyze(self, s),
            NodeEnum::LockStmt(s) => crate::locking::analyze_lock(s),
            NodeEnum::TransactionStmt(t) => {
                use pb::TransactionStmtKind as K;
                let cmd = match K::try_from(t.kind).unwrap_or(K::Undefined) {
                    k @ (K::TransStmtBegin | K::TransStmtStart) => {
                        let (isolation, modes) = txn_options(&t.options)?;
                        TxnCmd::Begin { isolation, modes, start: k == K::TransStmtStart }
                    }
                    K::TransStmtCommit if !t.chain => TxnCmd::Commit,
                    K::TransStmtRollback if !t.chain => TxnCmd::Rollback,
                    K::TransStmtSavepoint => TxnCmd::Savepoint(t.savepoint_name.clone()),
                    K::TransStmtRelease => TxnCmd::Release(t.savepoint_name.clone()),
                    K::TransStmtRollbackTo => TxnCmd::RollbackTo(t.savepoint_name.clone()),
                    _ => return Err(SqlError::not_supported("this transaction command")),
                };
                Ok(Statement::Transaction(cmd))
            }
            NodeEnum::VariableSetStmt(v) => {
                use pb::VariableSetKind as K;
                let kind = K::try_from(v.kind).unwrap_or(K::Undefined);
                match kind {
                    K::VarSetValue if v.name.eq_ignore_ascii_case("search_path") => {
                        Ok(Statement::Set { name: "search_path".into(), value: Some(crate::namespace::set_value(&v.args)?), local: v.is_local })
                    }
                    K::VarSetValue => Ok(Statement::Set { name: v.name.to_ascii_lowercase(), value: Some(set_value(&v.args)?), local: v.is_local }),
                    K::VarSetDefault | K::VarReset => Ok(Statement::Set { name: v.name.to_ascii_lowercase(), value: None, local: v.is_local }),
                    K::VarSetMulti if v.name == "TRANSACTION" || v.name == "SESSION CHARACTERISTICS" => {
                        let (iso, modes) = txn_options(&v.args)?;
                        match (v.name.as_str(), iso) {
                            ("TRANSACTION", Some(i)) if modes == Default::default() => Ok(Statement::Transaction(TxnCmd::SetIsolation(i))),
                            ("TRANSACTION", iso) => Ok(Statement::Transaction(TxnCmd::SetModes(iso, modes))),
                            _ => Err(SqlError::not_supported("SET SESSION CHARACTERISTICS")),
                        }
                    }
                    K::VarResetAll => Ok(Statement::Utility(crate::utility::SessionCmd::ResetAll)),
                    _ => Err(SqlError::not_supported("this form of SET")),
                }
            }
            NodeEnum::VariableShowStmt(s) => Ok(Statement::Show(s.name.to_ascii_lowercase())),
            NodeEnum::CopyStmt(s) => crate::copy::analyze(self, s),
            NodeEnum::CreateSchemaStmt(s) => Ok(ddl(crate::constraints::DdlCmd::Schema(crate::namespace::ddl::analyze_create(s)?))),
            NodeEnum::RenameStmt(s) if s.rename_type == pb::ObjectType::ObjectSchema as i32 => {
                Ok(ddl(crate::constraints::DdlCmd::Schema(crate::namespace::ddl::analyze_rename(s)?)))
            }
            NodeEnum::CreateSeqStmt(s) => Ok(ddl(crate::constraints::DdlCmd::Seq(crate::sequence::analyze_create(self, s)?))),
            NodeEnum::AlterSeqStmt(s) => Ok(ddl(crate::constraints::DdlCmd::Seq(crate::sequence::analyze_alter(self, s)?))),
            NodeEnum::CreatedbStmt(s) => self.create_database(s),
            NodeEnum::CreateRoleStmt(s) => Ok(Statement::Role(crate::roles::analyze_create(s, self.sql)?)),
            NodeEnum::AlterRoleStmt(s) => Ok(Statement::Role(crate::roles::analyze_alter(s, self.sql)?)),
            NodeEnum::AlterRoleSetStmt(s) => Ok(Statement::Role(crate::roles::analyze_set(s)?)),
            NodeEnum::DropRoleStmt(s) => Ok(Statement::Role(crate::roles::analyze_drop(s)?)),
            NodeEnum::GrantRoleStmt(s) => Ok(Statement::Role(crate::roles::analyze_grant(s)?)),
            NodeEnum::GrantStmt(s) => Ok(Statement::Grant(Box::new(crate::grant::analyze(s, &mut |tn| self.type_name(Some(tn)).map(|t| t.0))?))),
            NodeEnum::ReassignOwnedStmt(s) => Ok(Statement::Owner(Box::new(crate::grant::analyze_reassign(s)?))),
            NodeEnum::DropOwnedStmt(s) => Ok(Statement::Owner(Box::new(crate::grant::analyze_drop_owned(s)?))),
            NodeEnum::AlterDefaultPrivilegesStmt(s) => Ok(Statement::Grant(Box::new(crate::grant::analyze_defaults(s)?))),
            NodeEnum::AlterOwnerStmt(s) if s.object_type == pb::ObjectType::ObjectDatabase as i32 => {
                let name = match s.object.as_ref().and_then(|o| o.node.as_ref()) {
                    Some(NodeEnum::String(n)) => n.sval.clone(),
                    _ => return Err(SqlError::not_supported("this ALTER DATABASE OWNER form")),
                };
                let new_owner = s.newowner.as_ref().map(crate::roles::role_ref).ok_or_else(|| SqlError::internal("OWNER TO without a role"))?;
                Ok(Statement::Owner(Box::new(crate::grant::OwnerCmd::Database { name, new_owner })))
            }
            NodeEnum::AlterOwnerStmt(s)
                if [pb::ObjectType::ObjectFunction, pb::ObjectType::ObjectProcedure, pb::ObjectType::ObjectRoutine].map(|t| t as i32).contains(&s.object_type) =>
            {
                let Some(NodeEnum::ObjectWithArgs(ow)) = s.object.as_ref().and_then(|o| o.node.as_ref()) else {
                    return Err(SqlError::internal("ALTER FUNCTION OWNER without a function"));
                };
                let item = crate::grant::function_item(ow, &mut |tn| self.type_name(Some(tn)).map(|t| t.0))?;
                let new_owner = s.newowner.as_ref().map(crate::roles::role_ref).ok_or_else(|| SqlError::internal("OWNER TO without a role"))?;
                let procedure = s.object_type == pb::ObjectType::ObjectProcedure as i32;
                Ok(Statement::Owner(Box::new(crate::grant::OwnerCmd::Function { item, procedure, new_owner })))
            }
            NodeEnum::AlterOwnerStmt(s) if s.object_type == pb::ObjectType::ObjectSchema as i32 => {
                let name = match s.object.as_ref().and_then(|o| o.node.as_ref()) {
                    Some(NodeEnum::String(n)) => n.sval.clone(),
                    _ => return Err(SqlError::not_supported("this ALTER SCHEMA OWNER form")),
                };
                let new_owner = s.newowner.as_ref().map(crate::roles::role_ref).ok_or_else(|| SqlError::internal("OWNER TO without a role"))?;
                Ok(Statement::Owner(Box::new(crate::grant::OwnerCmd::Schema { name, new_owner })))
            }
            NodeEnum::RenameStmt(s) if s.rename_type() == pb::ObjectType::ObjectRole => {
                Ok(Statement::Role(crate::roles::RoleCmd::Rename { name: s.subname.clone(), new_name: s.newname.clone() }))
            }
            NodeEnum::DropdbStmt(s) => self.drop_database(s),
            NodeEnum::AlterDatabaseStmt(s) => self.alter_database(s),
            NodeEnum::RenameStmt(s) if s.rename_type() == pb::ObjectType::ObjectDatabase => self.rename_database(s),
            other => Err(SqlError::not_supported(format!("statement type {}", node_kind(other)))),
        }
    }

    /// Records that the statement needs `privs` on relation `rel`, checked as
    /// the owner of the view being expanded if any ([`crate::acl`]).
    /// The statement's path does not record the columns it names, so a
    /// column-level check counts every column as named.
    pub(crate) fn require(&self, rel: u32, privs: u16) {
        if self.views.opaque || privs == 0 {
            return;
        }
        crate::catcache::require(self.backend, crate::acl::PermReq { rel, privs, any: false, check_as: self.views.check_as, cols: None, func: false });
    }

    /// [`Analyzer::require`] for a path that records every column it names
    /// ([`Analyzer::require_column`]): a column-level check looks at those.
    pub(crate) fn require_tracked(&self, rel: u32, privs: u16) {
        if self.views.opaque || privs == 0 {
            return;
        }
        let cols = Some(Box::default());
        crate::catcache::require(self.backend, crate::acl::PermReq { rel, privs, any: false, check_as: self.views.check_as, cols, func: false });
    }

    /// Records that the statement names column `attnum` (1-based; 0: the
    /// whole row) of relation `rel` for `privilege` (PostgreSQL's
    /// selectedCols / insertedCols / updatedCols).
    pub(crate) fn require_column(&self, rel: u32, privilege: u16, attnum: i16) {
        if self.views.opaque || rel == 0 {
            return;
        }
        crate::catcache::require_column(self.backend, rel, self.views.check_as, privilege, attnum);
    }

    /// [`Analyzer::require`] of what DML statement `stmt` needs on its target.
    pub(crate) fn require_dml(&self, rel: u32, stmt: &NodeEnum) {
        self.require(rel, crate::acl::dml_privs(stmt));
    }

    /// [`Analyzer::require_dml`] for the paths that record their columns.
    pub(crate) fn require_dml_tracked(&self, rel: u32, stmt: &NodeEnum) {
        self.require_tracked(rel, crate::acl::dml_privs(stmt));
    }

    /// [`Analyzer::range_table_locked`] for a table whose rows the statement
    /// reads (FROM, and the targets of UPDATE and DELETE): when the statement's
    /// text names a system column (`ctid`, `xmin`, `cmin`, `xmax`, `cmax`,
    /// `tableoid`, in any case), its rows carry them
    /// ([`catalog::with_system_columns`]); a statement that names none reads
    /// rows of the table's own columns only.
    pub(crate) fn scanned_table_locked(&self, rv: &pb::RangeVar, mode: ferrogres_engine::lmgr::lock::LockMode) -> Result<Table> {
        let t = self.range_table_locked(rv, mode)?;
        Ok(if names_system_column(self.sql) { catalog::with_system_columns(t) } else { t })
    }

    pub(crate) fn range_table(&self, rv: &pb::RangeVar) -> Result<Table> {
        if !rv.catalogname.is_empty() {
            return Err(SqlError::not_supported("cross-database references"));
        }
        let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
        if let Some(view) = crate::sysviews::lookup(schema, &rv.relname) {
            return Ok(view);
        }
        if let Some(view) = crate::pgcatalog::lookup(schema, &rv.relname) {
            return Ok(view);
        }
        if schema == Some("information_schema") {
            return Err(self.err_at(SqlError::not_supported(format!("system view \"information_schema.{}\"", rv.relname)), rv.location));
        }
        // An explicitly named schema needs USAGE (PostgreSQL's LookupExplicitNamespace).
        if let Some(s) = schema {
            if let Some(ns) = crate::namespace::schema_oid(self.backend, self.snap, s)? {
                crate::acl::check_usage_of(self.backend, self.snap, ns).map_err(|e| self.err_at(e, rv.location))?;
            }
        }
        let found = match catalog::lookup_table(self.backend, self.snap, schema, &rv.relname) {
            // A missing schema reads as a missing relation here, as in PostgreSQL.
            Err(e) if e.sqlstate() == "3F000" => None,
            r => r.map_err(|e| self.err_at(e, rv.location))?,
        };
        match found {
            Some(t) if t.namespace == catalog::PG_CATALOG_NAMESPACE => {
                Err(self.err_at(SqlError::not_supported(format!("querying system catalog \"{}\"", rv.relname)), rv.location))
            }
            Some(t) => Ok(t),
            None if schema.is_none() && rv.relname.starts_with("pg_") || schema == Some("pg_catalog") || schema == Some("information_schema") => {
                Err(self.err_at(SqlError::not_supported(format!("system view \"{}\"", rv.relname)), rv.location))
            }
            None => {
                let name = match schema {
                    Some(s) => format!("{s}.{}", rv.relname),
                    None => rv.relname.clone(),
                };
                Err(self.err_at(SqlError::new(b"42P01", format!("relation \"{name}\" does not exist")), rv.location))
            }
        }
    }

    pub(crate) fn select(&mut self, s: &pb::SelectStmt) -> Result<Query> {
        self.select_level(s, &[])
    }

    /// A SELECT at a query level below `outer` (the enclosing levels' namespaces).
    pub(crate) fn select_level(&mut self, s: &pb::SelectStmt, outer: &[std::rc::Rc<from::Namespace>]) -> Result<Query> {
        ferrogres_datum::stack_depth::check()?;
        if s.op != pb::SetOperation::SetopNone as i32 {
            return self.set_operation(s, outer);
        }
        if !s.values_lists.is_empty() {
            return self.values_query(s, outer);
        }
        let ctes = match &s.with_clause {
            Some(w) => self.with_clause(w, outer)?,
            None => Vec::new(),
        };
        if s.into_clause.is_some() {
            return Err(SqlError::not_supported("SELECT INTO"));
        }
        let mut series = None;
        // FOR UPDATE/SHARE: RowShareLock instead (crate::locking, which calls this).
        let rel_mode = if s.locking_clause.is_empty() {
            ferrogres_engine::lmgr::lock::LockMode::AccessShare
        } else {
            ferrogres_engine::lmgr::lock::LockMode::RowShare
        };
        let mut from_source = None;
        let mut from_ns = None;
        let table = match s.from_clause.as_slice() {
            [] => None,
            items if !self.simple_from(s, outer) => {
                let (src, ns) = self.from_clause(items, rel_mode, outer, &ctes)?;
                from_source = Some(src);
                from_ns = Some(std::rc::Rc::new(ns));
                None
            }
            [f] => match f.node.as_ref() {
                Some(NodeEnum::RangeVar(rv)) => {
                    let t = self.scanned_table_locked(rv, rel_mode)?;
                    self.require_tracked(t.oid, crate::acl::select_privs(rel_mode));
                    let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
                    if rv.alias.as_ref().is_some_and(|a| !a.colnames.is_empty()) {
                        return Err(SqlError::not_supported("column aliases in FROM"));
                    }
                    Some((t, refname))
                }
                Some(NodeEnum::JoinExpr(_)) => return Err(SqlError::not_supported("JOIN")),
                Some(NodeEnum::RangeSubselect(_)) => return Err(SqlError::not_supported("subqueries in FROM")),
                Some(NodeEnum::RangeFunction(rf)) => {
                    let (t, refname, scan) = crate::srf::range_function(self, rf, outer)?;
                    series = Some(scan);
                    Some((t, refname))
                }
                _ => return Err(SqlError::not_supported("this FROM item")),
            },
            _ => return Err(SqlError::not_supported("more than one table in FROM (joins)")),
        };
        let mut scope = Scope::new(table.as_ref().map(|(t, r)| (t, r.clone())));
        scope.reads = series.is_none();
        scope.ns = from_ns;
        scope.outer = outer.to_vec();
        let filter = match node(&s.where_clause) {
            Some(w) => Some(self.bool_expr(w, &mut scope, "WHERE")?),
            None => None,
        };
        scope.aggs = Some(Vec::new());
        self.window_clause(s, &mut scope)?;
        let targets = self.targets(&s.target_list, &mut scope)?;
        // ORDER BY: an output column number, an output column name, or an expression.
        let mut hidden = Vec::new();
        let mut order = Vec::new();
        for sb in &s.sort_clause {
            let Some(NodeEnum::SortBy(sb)) = &sb.node else { continue };
            let (desc, nulls_first) = sort_direction(sb)?;
            let Some(n) = node(&sb.node) else { continue };
            let column = match n {
                NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), location, .. }) => {
                    let pos = i.ival;
                    if pos < 1 || pos as usize > targets.len() {
                        return Err(self.err_at(
                            SqlError::new(b"42P10", format!("ORDER BY position {pos} is not in select list")),
                            *location,
                        ));
                    }
                    pos as usize - 1
                }
                NodeEnum::ColumnRef(c)
                    if c.fields.len() == 1
                        && str_of(&c.fields[0]).is_some_and(|name| targets.iter().filter(|t| t.name == name).count() == 1) =>
                {
                    let name = str_of(&c.fields[0]).unwrap_or_default();
                    targets.iter().position(|t| t.name == name).unwrap_or(0)
                }
                other => {
                    let e = self.expr(other, &mut scope)?;
                    hidden.push(e);
                    targets.len() + hidden.len() - 1
                }
            };
            order.push(SortKey { column, desc, nulls_first });
        }
        let distinct = self.distinct(s, &targets, &mut hidden, &mut order, &mut scope)?;
        let windows = self.take_windows(&mut scope);
        let grouping = self.group_by(s, &targets, &windows.checked(&hidden), &mut scope)?;
        let aggregates = scope.aggs.take().unwrap_or_default();
        // Aggregates the plain Aggregate cannot run go through crate::grouping.
        let grouping = match grouping {
            None if aggregates.iter().any(|a| !matches!(a.kind, AggKind::CountStar | AggKind::Count | AggKind::Sum | AggKind::Min | AggKind::Max) || a.filter.is_some() || a.distinct || !a.order.is_empty()) => {
                Some(crate::grouping::Grouping { keys: vec![], having: None, sets: None })
            }
            g => g,
        };
        let (targets, hidden, grouping) = self.grouping_sets_output(grouping, targets, hidden, windows.is_empty(), &scope)?;
        if !aggregates.is_empty() && s.group_clause.is_empty() && s.having_clause.is_none() {
            // The first column read outside an aggregate, here or by a subquery.
            let sub = self.ungrouped_sub_column(&scope, &|_| false);
            if let Some((loc, name)) = scope.bare_column.take() {
                if sub.as_ref().is_none_or(|(sl, _)| loc <= *sl) {
                    return Err(self.err_at(
                        SqlError::new(b"42803", format!("column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function")),
                        loc,
                    ));
                }
            }
            if let Some((_, e)) = sub {
                return Err(e);
            }
        }
        let mut lscope = Scope::new(None);
        lscope.outer = scope.outer.clone();
        lscope.windows = window::Windows::Refused("LIMIT");
        lscope.agg_place = Some("LIMIT");
        let limit_option = pb::LimitOption::try_from(s.limit_option).unwrap_or(pb::LimitOption::Default);
        if limit_option == pb::LimitOption::WithTies {
            return Err(SqlError::not_supported("FETCH ... WITH TIES"));
        }
        let limit = match node(&s.limit_count) {
            Some(NodeEnum::AConst(c)) if c.isnull => None,
            Some(n) => {
                let e = self.expr(n, &mut lscope)?;
                Some(self.coerce(e, Type::Int8, CastContext::Implicit, location(n))?)
            }
            None => None,
        };
        lscope.windows = window::Windows::Refused("OFFSET");
        lscope.agg_place = Some("OFFSET");
        let offset = match node(&s.limit_offset) {
            Some(n) => {
                let e = self.expr(n, &mut lscope)?;
                Some(self.coerce(e, Type::Int8, CastContext::Implicit, location(n))?)
            }
            None => None,
        };
        windows.check_locking(s)?;
        if from_source.is_some() && !s.locking_clause.is_empty() {
            return Err(SqlError::not_supported("FOR UPDATE/SHARE over joins, subqueries or CTEs"));
        }
        // Constant folding of the level's expressions, before the join
        // search estimates its conditions (`optimizer::fold`).
        let mut filter = filter;
        let (mut targets, mut hidden, mut aggregates, mut grouping, mut limit, mut offset) = (targets, hidden, aggregates, grouping, limit, offset);
        {
            use crate::optimizer::fold::fold_in_place as f;
            let mut st = crate::optimizer::fold::Folded::default();
            if let Some(src) = from_source.as_mut() {
                crate::optimizer::fold::fold_source(src, &mut st);
            }
            for e in filter.iter_mut().chain(targets.iter_mut().map(|t| &mut t.expr)).chain(hidden.iter_mut()).chain(limit.iter_mut()).chain(offset.iter_mut()) {
                f(e, &mut st);
            }
            for a in aggregates.iter_mut() {
                for e in a.arg.iter_mut().chain(a.filter.iter_mut()).chain(a.arg2.iter_mut()) {
                    f(e, &mut st);
                }
            }
            if let Some(h) = grouping.as_mut().and_then(|g| g.having.as_mut()) {
                f(h, &mut st);
            }
            if self.fold_error.is_none() {
                self.fold_error = st.error;
            }
        }
        // The width of the level's row, for the sublink pull-up below.
        let width = scope.ns.as_ref().map(|ns| ns.cols.len()).or(table.as_ref().map(|(t, _)| t.columns.len())).unwrap_or(0);
        let mut source = from_source;
        if let Some(src) = source.as_mut() {
            if s.locking_clause.is_empty() {
                // The columns read above the FROM tree (no window functions:
                // their arguments are not in these expressions yet).
                let needed = windows.is_empty().then(|| {
                    let mut exprs: Vec<&Expr> = targets.iter().map(|t| &t.expr).chain(hidden.iter()).collect();
                    for a in &aggregates {
                        exprs.extend(a.arg.iter().chain(a.filter.iter()).chain(a.arg2.iter()).chain(a.order.iter().map(|k| &k.expr)));
                    }
                    if let Some(g) = &grouping {
                        exprs.extend(g.keys.iter().chain(g.having.iter()));
                    }
                    crate::optimizer::projection::level_needs(&exprs)
                });
                let pc = crate::prep::PlanCtx { backend: self.backend, snap: self.snap, settings: &self.planner, needed };
                crate::prep::reorder_inner_joins(src, &mut filter, &pc);
            }
        }
        let filter = match source.as_mut() {
            Some(src) => crate::join::place_conditions(src, filter),
            None => filter,
        };
        let query = Query {
            source: match (series, table) {
                _ if source.is_some() => source.take().expect("checked"),
                (Some(f), _) => Source::Function(f),
                (None, Some((t, _))) => crate::sysviews::source(t),
                (None, None) => Source::OneRow,
            },
            filter,
            aggregates,
            targets,
            hidden,
            order,
            limit,
            offset,
            grouping: grouping.map(Box::new),
            distinct,
            paths: Default::default(),
            init_plans: Default::default(),
        };
        let mut query = query;
        if s.locking_clause.is_empty() && !matches!(query.source, Source::OneRow | Source::Virtual(_)) {
            crate::prep::pull_up_sublinks(&mut query, width);
            let pc = crate::prep::PlanCtx { backend: self.backend, snap: self.snap, settings: &self.planner, needed: None };
            crate::optimizer::estimate::semi_join_estimates(&mut query.source, &pc);
        }
        self.window_query(query, windows)
    }

    fn targets(&mut self, list: &[pb::Node], scope: &mut Scope) -> Result<Vec<Target>> {
        let mut out = Vec::new();
        for t in list {
            let Some(NodeEnum::ResTarget(rt)) = &t.node else { continue };
            let Some(val) = node(&rt.val) else { continue };
            // `*` and `t.*`
            if let NodeEnum::ColumnRef(c) = val {
                if matches!(c.fields.last().and_then(|f| f.node.as_ref()), Some(NodeEnum::AStar(_))) {
                    if let Some(ts) = self.star_levels(c, scope)? {
                        out.extend(ts);
                        continue;
                    }
                    let Some((table, refname)) = scope.table.clone() else {
                        return Err(self.err_at(SqlError::new(b"42601", "SELECT * with no tables specified is not valid"), c.location));
                    };
                    if c.fields.len() == 2 && str_of(&c.fields[0]) != Some(refname.as_str()) {
                        let q = str_of(&c.fields[0]).unwrap_or_default();
                        return Err(self.err_at(missing_from_entry(q, &table.name, &refname), c.location));
                    }
                    if scope.aggs.is_some() && !scope.in_agg && scope.bare_column.is_none() {
                        if let Some(c0) = table.columns.first() {
                            scope.bare_column = Some((c.location, format!("{refname}.{}", c0.name)));
                        }
                    }
                    for (i, col) in table.columns[..table.user_columns()].iter().enumerate().filter(|(_, c)| !c.is_dropped()) {
                        if scope.reads {
                            self.require_column(table.oid, crate::acl::SELECT, i as i16 + 1);
                        }
                        out.push(Target {
                            name: col.name.clone(),
                            expr: Expr::Column(i, col.ty),
                            typmod: col.typmod,
                            origin: Some((table.oid, i as i16 + 1)),
                        });
                    }
                    continue;
                }
            }
            let expr = self.expr(val, scope)?;
            let expr = self.resolve_unknown(expr);
            let (default_name, typmod, origin) = self.target_info(val, &expr, scope);
            let name = if rt.name.is_empty() { default_name } else { rt.name.clone() };
            out.push(Target { name, expr, typmod, origin });
        }
        Ok(out)
    }

    /// The default name of expression `val` (analyzed as `expr`) outside any
    /// FROM scope: a function-like expression in FROM is named so.
    pub(crate) fn figure_colname(&self, val: &NodeEnum, expr: &Expr) -> String {
        self.target_info(val, expr, &Scope::new(None)).0
    }

    /// An output column's default name, typmod and origin, as PostgreSQL's FigureColname.
    fn target_info(&self, val: &NodeEnum, expr: &Expr, scope: &Scope) -> (String, i32, Option<(u32, i16)>) {
        match val {
            NodeEnum::ColumnRef(c) => {
                let name = c.fields.last().and_then(str_of).unwrap_or("?column?").to_string();
                if let (Expr::Column(i, _), Some((t, _))) = (expr, &scope.table) {
                    return (name, t.columns[*i].typmod, Some((t.oid, t.attnum(*i))));
                }
                if let Some((typmod, origin)) = match expr {
                    Expr::Column(i, _) => self.column_info(scope, *i),
                    _ => None,
                } {
                    return (name, typmod, origin);
                }
                (name, -1, None)
            }
            // A schema-qualified call is named after the function too, as in PostgreSQL.
            NodeEnum::FuncCall(f) => (func_name(f).or_else(|| f.funcname.last().and_then(str_of).map(str::to_string)).unwrap_or_else(|| "?column?".into()), -1, None),
            NodeEnum::SubLink(_) => (sublink::column_name(expr), -1, None),
            NodeEnum::SqlvalueFunction(f) => (ferrogres_datum::datetime::sql_value_function_name(f.op).to_string(), -1, None),
            NodeEnum::CaseExpr(c) => (node(&c.defresult).and_then(exprs::strong_name).unwrap_or_else(|| "case".into()), -1, None),
            NodeEnum::CoalesceExpr(_) => ("coalesce".into(), -1, None),
            NodeEnum::GroupingFunc(_) => ("grouping".into(), -1, None),
            NodeEnum::AArrayExpr(_) => ("array".into(), -1, None),
            // `(record).field` is named after the field.
            NodeEnum::AIndirection(i) if matches!(i.indirection.last().and_then(|n| n.node.as_ref()), Some(NodeEnum::String(_))) => {
                (i.indirection.last().and_then(|n| str_of(n)).unwrap_or("?column?").to_string(), -1, None)
            }
            NodeEnum::AIndirection(i) => match node(&i.arg) {
                Some(n @ (NodeEnum::ColumnRef(_) | NodeEnum::FuncCall(_) | NodeEnum::AArrayExpr(_) | NodeEnum::TypeCast(_))) => {
                    (self.target_info(n, expr, scope).0, -1, None)
                }
                _ => ("?column?".into(), -1, None),
            },
            NodeEnum::MinMaxExpr(m) => (if m.op == pb::MinMaxOp::IsGreatest as i32 { "greatest" } else { "least" }.into(), -1, None),
            NodeEnum::AExpr(a) if a.kind == pb::AExprKind::AexprNullif as i32 => ("nullif".into(), -1, None),
            NodeEnum::TypeCast(tc) => {
                let inner = node(&tc.arg);
                match inner {
                    Some(n @ (NodeEnum::ColumnRef(_) | NodeEnum::FuncCall(_) | NodeEnum::AArrayExpr(_))) => {
                        (self.target_info(n, expr, scope).0, typmod_of(expr), None)
                    }
                    _ => {
                        let name = tc
                            .type_name
                            .as_ref()
                            .and_then(|t| t.names.last())
                            .and_then(str_of)
                            .map(|s| match s {
                                "int" | "integer" => "int4".to_string(),
                                "bigint" => "int8".to_string(),
                                "smallint" => "int2".to_string(),
                                "boolean" => "bool".to_string(),
                                other => other.to_string(),
                            })
                            .unwrap_or_else(|| "?column?".into());
                        (name, typmod_of(expr), None)
                    }
                }
            }
            _ => ("?column?".into(), -1, None),
        }
    }

    /// An output column still of type unknown (`SELECT 'x'`) becomes text.
    pub(crate) fn resolve_unknown(&self, e: Expr) -> Expr {
        match e {
            Expr::Const(v, Type::Unknown) => Expr::Const(v, Type::Text),
            e => e,
        }
    }

    fn bool_expr(&mut self, n: &NodeEnum, scope: &mut Scope, what: &str) -> Result<Expr> {
        let saved = scope.no_srf;
        if what == "WHERE" {
            scope.no_srf = Some("WHERE");
        }
        let e = self.expr(n, scope);
        scope.no_srf = saved;
        let e = e?;
        match e.ty() {
            Type::Bool => Ok(e),
            Type::Unknown => self.coerce(e, Type::Bool, CastContext::Implicit, location(n)),
            t => Err(self.err_at(
                SqlError::new(b"42804", format!("argument of {what} must be type boolean, not type {}", t.sql_name())),
                location(n),
            )),
        }
    }

    /// Converts `e` to `to` if the cast is allowed in `ctx`. Unknown literals are
    /// converted now (errors carry the literal's position); other casts at run time.
    pub fn coerce(&mut self, e: Expr, to: Type, ctx: CastContext, loc: i32) -> Result<Expr> {
        self.coerce_typmod(e, to, -1, ctx, loc)
    }

    fn coerce_typmod(&mut self, e: Expr, to: Type, typmod: i32, ctx: CastContext, loc: i32) -> Result<Expr> {
        let from = e.ty();
        if let Expr::Param(i, Type::Unknown) = e {
            self.params[i] = Some(to);
            if typmod >= 0 && to.typmod_matters() {
                // The length (bpchar padding, varchar check) or precision coercion.
                let arg = Box::new(Expr::Param(i, to));
                return Ok(Expr::Cast { arg, from: to, to, typmod, explicit: ctx == CastContext::Explicit });
            }
            return Ok(Expr::Param(i, to));
        }
        if from == to && (typmod < 0 || !to.typmod_matters()) {
            return Ok(e);
        }
        if let Expr::Const(v, Type::Unknown) = &e {
            let explicit = ctx == CastContext::Explicit;
            let v = match v {
                Value::Null => Value::Null,
                Value::Text(s) => {
                    let v = types::input(to, s, if to.is_string() || matches!(to, Type::Array(_)) || to == Type::Numeric { -1 } else { typmod }).map_err(|er| self.err_at(er, loc))?;
                    if matches!(to, Type::Array(_)) && typmod >= 0 || to == Type::Numeric {
                        // The elements' length coercion and numeric(p, s)'s overflow
                        // are run-time errors in PostgreSQL: no position.
                        types::cast(v, to, to, typmod, explicit)?
                    } else if to == Type::Bpchar {
                        let Value::Text(s) = v else { unreachable!("bpchar input gives text") };
                        Value::Text(types::check_bpchar(&s, typmod, explicit)?)
                    } else if to == Type::Varchar {
                        let Value::Text(s) = v else { unreachable!("varchar input gives text") };
                        // The length check is a run-time error in PostgreSQL: no position.
                        Value::Text(types::check_varchar(&s, typmod, explicit)?)
                    } else {
                        v
                    }
                }
                other => other.clone(),
            };
            return Ok(Expr::Const(v, to));
        }
        if !types::cast_allowed(from, to, ctx) {
            let msg = match ctx {
                CastContext::Explicit => types::cannot_cast(from, to),
                _ => SqlError::new(
                    b"42804",
                    format!("column is of type {} but expression is of type {}", to.name_with_typmod(typmod), from.sql_name()),
                )
                .with_hint("You will need to rewrite or cast the expression."),
            };
            return Err(self.err_at(msg, loc));
        }
        Ok(Expr::Cast { arg: Box::new(e), from, to, typmod, explicit: ctx == CastContext::Explicit })
    }

    fn column_ref(&mut self, c: &pb::ColumnRef, scope: &mut Scope) -> Result<Expr> {
        if scope.ns.is_some() || !scope.outer.is_empty() {
            return self.column_ref_levels(c, scope);
        }
        let names: Vec<&str> = c.fields.iter().filter_map(str_of).collect();
        if names.len() != c.fields.len() {
            return Err(self.err_at(SqlError::not_supported("this column reference"), c.location));
        }
        let names = self.strip_column_qualifiers(names, c.location)?;
        let (qual, col) = match names.as_slice() {
            [col] => (None, *col),
            [t, col] => (Some(*t), *col),
            _ => return Err(self.err_at(improper_qualified_name(&names), c.location)),
        };
        let Some((table, refname)) = scope.table.clone() else {
            return Err(match qual {
                Some(q) => self.err_at(SqlError::new(b"42P01", format!("missing FROM-clause entry for table \"{q}\"")), c.location),
                None => self.err_at(SqlError::new(b"42703", format!("column \"{col}\" does not exist")), c.location),
            });
        };
        if let Some(q) = qual {
            if q != refname {
                return Err(self.err_at(missing_from_entry(q, &table.name, &refname), c.location));
            }
        }
        let Some(i) = table.columns.iter().position(|x| x.name == col) else {
            // PostgreSQL quotes an unqualified name only.
            let shown = match qual {
                Some(q) => format!("{q}.{col}"),
                None => format!("\"{col}\""),
            };
            return Err(self.err_at(SqlError::new(b"42703", format!("column {shown} does not exist")), c.location));
        };
        if scope.aggs.is_some() && !scope.in_agg && scope.bare_column.is_none() {
            scope.bare_column = Some((c.location, format!("{refname}.{col}")));
        }
        if scope.aggs.is_some() && !scope.in_agg {
            scope.seen_columns.push((c.location, format!("{refname}.{col}"), i));
        }
        if scope.reads {
            // A system column reads the whole row for the privilege check.
            let attnum = if table.is_system(i) { 0 } else { i as i16 + 1 };
            self.require_column(table.oid, crate::acl::SELECT, attnum);
        }
        Ok(Expr::Column(i, table.columns[i].ty))
    }

    fn expr(&mut self, n: &NodeEnum, scope: &mut Scope) -> Result<Expr> {
        ferrogres_datum::stack_depth::check()?;
        match n {
            NodeEnum::AConst(c) => self.constant(c),
            NodeEnum::ColumnRef(c) => self.column_ref(c, scope),
            NodeEnum::ParamRef(p) => {
                if !self.params_allowed || p.number < 1 || p.number > 65535 {
                    return Err(self.err_at(SqlError::new(b"42P02", format!("there is no parameter ${}", p.number)), p.location));
                }
                let i = p.number as usize - 1;
                if self.params.len() <= i {
                    self.params.resize(i + 1, None);
                }
                Ok(Expr::Param(i, self.params[i].unwrap_or(Type::Unknown)))
            }
            NodeEnum::TypeCast(tc) => {
                if let Some(e) = self.reg_cast(tc, scope)? {
                    return Ok(e);
                }
                let Some(arg) = node(&tc.arg) else { return Err(SqlError::internal("cast without argument")) };
                let (to, typmod) = self.type_name(tc.type_name.as_ref())?;
                // A decimal literal cast to a type we have: read it as that type.
                if let (NodeEnum::AConst(pb::AConst { val: Some(Val::Fval(f)), location, .. }), Type::Float8 | Type::Float4) = (arg, to) {
                    let v = types::input(to, &f.fval, typmod).map_err(|e| self.err_at(e, *location))?;
                    return Ok(Expr::Const(v, to));
                }
                if let (NodeEnum::AArrayExpr(a), Type::Array(et)) = (arg, to) {
                    // ARRAY[...]::t[] converts each element to t (errors point at the element).
                    let e = self.array_expr_of(a, Some(*et), scope)?;
                    return self.coerce_typmod(e, to, typmod, CastContext::Explicit, location(arg));
                }
                let e = self.expr(arg, scope)?;
                // A missing cast points at the cast itself (`::` or CAST), as in PostgreSQL.
                self.coerce_typmod(e, to, typmod, CastContext::Explicit, location(arg)).map_err(|mut er| {
                    if er.code == *b"42846" {
                        er.position = None;
                        er = self.err_at(er, tc.location);
                    }
                    er
                })
            }
            NodeEnum::AExpr(a) => self.a_expr(a, scope),
            NodeEnum::BoolExpr(b) => {
                let what = match pb::BoolExprType::try_from(b.boolop).unwrap_or(pb::BoolExprType::Undefined) {
                    pb::BoolExprType::AndExpr => "AND",
                    pb::BoolExprType::OrExpr => "OR",
                    _ => "NOT",
                };
                let mut args = Vec::new();
                for a in &b.args {
                    if let Some(a) = a.node.as_ref() {
                        args.push(self.bool_expr(a, scope, what)?);
                    }
                }
                Ok(match what {
                    "AND" => Expr::And(args),
                    "OR" => Expr::Or(args),
                    _ => Expr::Not(Box::new(args.pop().ok_or_else(|| SqlError::internal("NOT without argument"))?)),
                })
            }
            NodeEnum::NullTest(t) => {
                let Some(arg) = node(&t.arg) else { return Err(SqlError::internal("IS NULL without argument")) };
                let e = self.expr(arg, scope)?;
                Ok(Expr::IsNull { arg: Box::new(e), negated: t.nulltesttype == pb::NullTestType::IsNotNull as i32 })
            }
            NodeEnum::FuncCall(f) => self.func_call(f, scope),
            NodeEnum::GroupingFunc(g) => self.grouping_func(g, scope),
            NodeEnum::SqlvalueFunction(f) => self.sql_value_function(f),
            NodeEnum::SubLink(sl) => self.sublink(sl, scope),
            NodeEnum::AArrayExpr(a) => self.array_expr(a, scope),
            NodeEnum::AIndirection(i) => self.indirection(i, scope),
            NodeEnum::CollateClause(c) => self.collate_clause(c, scope),
            NodeEnum::CaseExpr(c) => self.case_expr(c, scope),
            NodeEnum::CoalesceExpr(c) => self.coalesce_expr(c, scope),
            NodeEnum::MinMaxExpr(m) => self.min_max_expr(m, scope),
            NodeEnum::BooleanTest(b) => self.boolean_test(b, scope),
            other => Err(SqlError::not_supported(format!("expression {}", node_kind(other)))),
        }
    }

    fn constant(&mut self, c: &pb::AConst) -> Result<Expr> {
        if c.isnull {
            return Ok(Expr::Const(Value::Null, Type::Unknown));
        }
        Ok(match &c.val {
            Some(Val::Ival(i)) => Expr::Const(Value::Int4(i.ival), Type::Int4),
            Some(Val::Fval(f)) => match f.fval.parse::<i64>() {
                // The grammar folds a minus into the literal: -2147483648 is an integer.
                Ok(v) if i32::try_from(v).is_ok() => Expr::Const(Value::Int4(v as i32), Type::Int4),
                Ok(v) => Expr::Const(Value::Int8(v), Type::Int8),
                Err(_) => Expr::Const(
                    Value::Numeric(ferrogres_datum::numeric::Numeric::parse(&f.fval).map_err(|e| self.err_at(e, c.location))?),
                    Type::Numeric,
                ),
            },
            Some(Val::Boolval(b)) => Expr::Const(Value::Bool(b.boolval), Type::Bool),
            Some(Val::Sval(s)) => Expr::Const(Value::Text(s.sval.clone()), Type::Unknown),
            Some(Val::Bsval(_)) => return Err(self.err_at(SqlError::not_supported("bit strings"), c.location)),
            None => Expr::Const(Value::Null, Type::Unknown),
        })
    }

    pub fn type_name(&self, tn: Option<&pb::TypeName>) -> Result<(Type, i32)> {
        let Some(tn) = tn else { return Err(SqlError::internal("missing type name")) };
        let names: Vec<&str> = tn.names.iter().filter_map(str_of).collect();
        let name = match names.as_slice() {
            ["pg_catalog", n] | [n] => *n,
            _ => "",
        };
        if !tn.array_bounds.is_empty() {
            return self.array_type_name(tn);
        }
        if Type::from_sql_name(name) == Some(Type::Numeric) && !tn.typmods.is_empty() {
            return self.numeric_typmod(tn);
        }
        let Some(ty) = Type::from_sql_name(name).filter(|t| *t != Type::Unknown && *t != Type::Void) else {
            let shown = names.join(".");
            let known = ["numeric", "float4", "real", "date", "timestamp", "timestamptz", "bytea", "char", "bpchar", "json", "jsonb", "uuid", "interval", "time", "name"];
            if known.contains(&name) {
                return Err(self.err_at(SqlError::not_supported(format!("type {name}")), tn.location));
            }
            return Err(self.err_at(SqlError::new(b"42704", format!("type \"{shown}\" does not exist")), tn.location));
        };
        let mut typmod = -1;
        if ty == Type::Interval && !tn.typmods.is_empty() {
            return crate::analyze::interval_typmod::typmod(self, tn).map(|m| (ty, m));
        }
        if !tn.typmods.is_empty() && matches!(ty, Type::Timestamp | Type::Timestamptz | Type::Time | Type::TimeTz) && tn.typmods.len() == 1 {
            match tn.typmods[0].node.as_ref() {
                Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), .. })) if i.ival >= 0 => {
                    return Ok((ty, i.ival.min(6)));
                }
                Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), .. })) => {
                    let what = if ty == Type::Time { "TIME" } else { "TIMESTAMP" };
                    return Err(self.err_at(SqlError::new(b"22023", format!("{what}({}) precision must not be negative", i.ival)), tn.location));
                }
                _ => return Err(self.err_at(SqlError::not_supported("this type modifier"), tn.location)),
            }
        }
        if !tn.typmods.is_empty() {
            if !matches!(ty, Type::Varchar | Type::Bpchar) || tn.typmods.len() != 1 {
                return Err(self.err_at(SqlError::not_supported(format!("type modifiers for {}", ty.sql_name())), tn.location));
            }
            match tn.typmods[0].node.as_ref() {
                Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), .. })) => {
                    let tname = if ty == Type::Bpchar { "char" } else { "varchar" };
                    if i.ival < 1 {
                        return Err(self.err_at(SqlError::new(b"22023", format!("length for type {tname} must be at least 1")), tn.location));
                    }
                    if i.ival > 10 * 1024 * 1024 {
                        return Err(self.err_at(SqlError::new(b"22023", format!("length for type {tname} cannot exceed 10485760")), tn.location));
                    }
                    typmod = i.ival + 4;
                }
                _ => return Err(self.err_at(SqlError::not_supported("this type modifier"), tn.location)),
            }
        }
        Ok((ty, typmod))
    }

    fn a_expr(&mut self, a: &pb::AExpr, scope: &mut Scope) -> Result<Expr> {
        use pb::AExprKind as K;
        let kind = K::try_from(a.kind).unwrap_or(K::Undefined);
        let op = a.name.iter().filter_map(str_of).next_back().unwrap_or("").to_string();
        if let Some(e) = self.row_compare(a, kind, &op, scope)? {
            return Ok(e);
        }
        if let Some(e) = self.a_expr_ext(a, kind, &op, scope)? {
            return Ok(e);
        }
        if matches!(kind, K::AexprOpAny | K::AexprOpAll) {
            return self.any_all(a, kind == K::AexprOpAll, &op, scope);
        }
        // `x [NOT] SIMILAR TO p` arrives as `x ~ similar_to_escape(p)` (`!~`).
        if kind != K::AexprOp && kind != K::AexprSimilar {
            return Err(self.err_at(SqlError::not_supported(format!("operator form {kind:?}")), a.location));
        }
        let r = match node(&a.rexpr) {
            Some(r) => self.expr(r, scope)?,
            None => return Err(SqlError::internal("operator without right operand")),
        };
        let Some(l) = node(&a.lexpr) else {
            // Prefix operators.
            if crate::functions::is_builtin_operator(&op) {
                let rloc = node(&a.rexpr).map_or(a.location, location);
                return self.builtin_operator(&op, None, r, a.location, (a.location, rloc));
            }
            return match op.as_str() {
                "-" if r.ty() == Type::Interval => {
                    Ok(Expr::Func { func: Func::DateTime(ferrogres_datum::datetime::DtFunc::IntervalNeg), args: vec![r], ty: Type::Interval })
                }
                "-" => {
                    let r = if r.ty() == Type::Unknown { self.coerce(r, Type::Int4, CastContext::Implicit, a.location)? } else { r };
                    let t = r.ty();
                    if !t.is_numeric() {
                        return Err(self.no_operator(&op, None, t, a.location));
                    }
                    // Fold a negated constant (-32768::int2 style literals).
                    Ok(Expr::Neg(Box::new(r), t))
                }
                "+" if r.ty().is_numeric() => Ok(r),
                _ => Err(self.no_operator(&op, None, r.ty(), a.location)),
            };
        };
        let lloc = location(l);
        let rloc = node(&a.rexpr).map_or(a.location, location);
        let l = self.expr(l, scope)?;
        self.binary(&op, l, r, a.location, (lloc, rloc))
    }

    fn no_operator(&self, op: &str, l: Option<Type>, r: Type, loc: i32) -> SqlError {
        let sig = match l {
            Some(l) => format!("{} {op} {}", l.sql_name(), r.sql_name()),
            None => format!("{op} {}", r.sql_name()),
        };
        self.err_at(
            SqlError::new(b"42883", format!("operator does not exist: {sig}"))
                .with_hint("No operator matches the given name and argument types. You might need to add explicit type casts."),
            loc,
        )
    }

    /// A binary operator; `locs` are the operands' locations (an unknown literal's
    /// conversion error points at the literal).
    fn binary(&mut self, op: &str, l: Expr, r: Expr, loc: i32, locs: (i32, i32)) -> Result<Expr> {
        if crate::functions::is_builtin_operator(op) {
            return self.builtin_operator(op, Some(l), r, loc, locs);
        }
        let (lt, rt) = (l.ty(), r.ty());
        if (op == "||" || op == "-") && (lt == Type::Jsonb || (op == "||" && rt == Type::Jsonb && (lt == Type::Unknown || !lt.is_string()))) {
            return self.builtin_operator(op, Some(l), r, loc, locs);
        }
        if (op == "+" || op == "-") && (lt == Type::PgLsn || rt == Type::PgLsn) {
            return self.builtin_operator(op, Some(l), r, loc, locs);
        }
        if op == "||" && (matches!(lt, Type::Array(_)) || matches!(rt, Type::Array(_))) {
            if let Some(e) = self.array_concat(l.clone(), r.clone(), loc)? {
                return Ok(e);
            }
        }
        if op == "||" {
            if lt.is_string() || rt.is_string() {
                let l = if lt == Type::Unknown { self.coerce(l, Type::Text, CastContext::Implicit, loc)? } else { l };
                let r = if rt == Type::Unknown { self.coerce(r, Type::Text, CastContext::Implicit, loc)? } else { r };
                // character(n) concatenates without its padding (as text).
                let l = if lt == Type::Bpchar { self.coerce(l, Type::Text, CastContext::Implicit, loc)? } else { l };
                let r = if rt == Type::Bpchar { self.coerce(r, Type::Text, CastContext::Implicit, loc)? } else { r };
                return Ok(Expr::Concat(Box::new(l), Box::new(r)));
            }
            if lt == Type::Bytea && rt == Type::Bytea {
                return self.builtin_operator(op, Some(l), r, loc, locs);
            }
            return Err(self.no_operator(op, Some(lt), rt, loc));
        }
        let cmp = match op {
            "=" => Some(CmpOp::Eq),
            "<>" | "!=" => Some(CmpOp::Ne),
            "<" => Some(CmpOp::Lt),
            "<=" => Some(CmpOp::Le),
            ">" => Some(CmpOp::Gt),
            ">=" => Some(CmpOp::Ge),
            _ => None,
        };
        let arith = match op {
            "+" => Some(ArithOp::Add),
            "-" => Some(ArithOp::Sub),
            "*" => Some(ArithOp::Mul),
            "/" => Some(ArithOp::Div),
            "%" => Some(ArithOp::Mod),
            _ => None,
        };
        if cmp.is_none() && arith.is_none() {
            return Err(self.no_operator(op, Some(lt), rt, loc));
        }
        // Unknown literals and untyped parameters take the other side's type.
        let (l, r) = match (lt, rt) {
            (Type::Unknown, Type::Unknown) => {
                if arith.is_some() {
                    return Err(self.err_at(
                        SqlError::new(b"42725", format!("operator is not unique: unknown {op} unknown"))
                            .with_hint("Could not choose a best candidate operator. You might need to add explicit type casts."),
                        loc,
                    ));
                }
                (self.coerce(l, Type::Text, CastContext::Implicit, loc)?, self.coerce(r, Type::Text, CastContext::Implicit, loc)?)
            }
            (Type::Unknown, t) => (self.coerce(l, t, CastContext::Implicit, locs.0)?, r),
            (t, Type::Unknown) => {
                let r = self.coerce(r, t, CastContext::Implicit, locs.1)?;
                (l, r)
            }
            _ => (l, r),
        };
        if let Some(e) = self.datetime_operator(op, cmp, &l, &r, loc)? {
            return Ok(e);
        }
        // character(n) compares without trailing blanks: against text as text,
        // against character(n) or varchar as character (both sides trimmed).
        let (l, r) = if (l.ty() == Type::Bpchar || r.ty() == Type::Bpchar) && l.ty().is_string() && r.ty().is_string() {
            let as_bpchar = l.ty() != Type::Text && r.ty() != Type::Text;
            let trim = |this: &mut Self, e: Expr| -> Result<Expr> {
                let e = if as_bpchar && e.ty() == Type::Varchar { this.coerce(e, Type::Bpchar, CastContext::Implicit, loc)? } else { e };
                if e.ty() == Type::Bpchar { this.coerce(e, Type::Text, CastContext::Implicit, loc) } else { Ok(e) }
            };
            (trim(self, l)?, trim(self, r)?)
        } else {
            (l, r)
        };
        let (l, r) = match (l.ty(), r.ty()) {
            (Type::Numeric, Type::Float8 | Type::Float4) => (self.coerce(l, Type::Float8, CastContext::Implicit, locs.0)?, r),
            (Type::Float8 | Type::Float4, Type::Numeric) => {
                let r = self.coerce(r, Type::Float8, CastContext::Implicit, locs.1)?;
                (l, r)
            }
            _ => (l, r),
        };
        let (lt, rt) = (l.ty(), r.ty());
        let rank = |t: Type| match t {
            Type::Int2 => 1,
            Type::Int4 => 2,
            Type::Int8 => 3,
            Type::Numeric => 4,
            Type::Float8 => 5,
            _ => 0,
        };
        let common = if (lt == Type::Float4 && rt == Type::Float4) || (lt == Type::Float4) != (rt == Type::Float4) && lt.is_numeric() && rt.is_numeric() {
            // real op real stays real; real with any other number is double precision.
            if lt == rt { Type::Float4 } else { Type::Float8 }
        } else if lt.is_numeric() && rt.is_numeric() {
            if rank(lt) >= rank(rt) { lt } else { rt }
        } else if lt.is_string() && rt.is_string() && cmp.is_some() {
            Type::Text
        } else if lt == rt && lt == Type::Bool && cmp.is_some() {
            Type::Bool
        } else if lt == rt && lt == Type::Oid && cmp.is_some() {
            Type::Oid
        } else if cmp.is_some() && ((lt == Type::Oid && rt.is_integer()) || (rt == Type::Oid && lt.is_integer())) {
            // An integer converts implicitly to oid (pg_catalog's `oid = 1259`).
            Type::Oid
        } else if lt == rt && lt == Type::Bytea && cmp.is_some() {
            Type::Bytea
        } else if lt == rt && lt == Type::Xid && matches!(cmp, Some(CmpOp::Eq | CmpOp::Ne)) {
            // xid has = and <> only.
            Type::Xid
        } else if lt == Type::Xid && matches!(rt, Type::Int4 | Type::Int2) && matches!(cmp, Some(CmpOp::Eq | CmpOp::Ne)) {
            // xid = int4 and xid <> int4 (xideqint4): the integer's 32 bits as an xid.
            let r = self.coerce(r, Type::Int4, CastContext::Implicit, loc)?;
            let r = Expr::Func { func: Func::Int4AsXid, args: vec![r], ty: Type::Xid };
            return Ok(Expr::Compare { op: cmp.expect("checked"), l: Box::new(l), r: Box::new(r) });
        } else if lt == rt && matches!(lt, Type::Array(_) | Type::Int2Vector | Type::OidVector | Type::Uuid | Type::Jsonb | Type::PgLsn | Type::Xid8 | Type::Tid) && cmp.is_some() {
            lt
        } else {
            return Err(self.no_operator(op, Some(lt), rt, loc));
        };
        let l = if lt.is_string() && common == Type::Text { l } else { self.coerce(l, common, CastContext::Implicit, loc)? };
        let r = if rt.is_string() && common == Type::Text { r } else { self.coerce(r, common, CastContext::Implicit, loc)? };
        Ok(match (cmp, arith) {
            (Some(op), _) => Expr::Compare { op, l: Box::new(l), r: Box::new(r) },
            (_, Some(op)) => Expr::Arith { op, l: Box::new(l), r: Box::new(r), ty: common },
            _ => unreachable!("checked above"),
        })
    }

    /// A binary operator with a date/time operand; `None` when neither side is one.
    fn datetime_operator(&mut self, op: &str, cmp: Option<CmpOp>, l: &Expr, r: &Expr, loc: i32) -> Result<Option<Expr>> {
        use ferrogres_datum::datetime::{is_datetime, resolve_operator};
        let (lt, rt) = (l.ty(), r.ty());
        if !is_datetime(lt) && !is_datetime(rt) {
            return Ok(None);
        }
        let r = if lt == Type::Interval && rt == Type::Numeric && (op == "*" || op == "/") {
            self.coerce(r.clone(), Type::Float8, CastContext::Implicit, loc)?
        } else {
            r.clone()
        };
        let Some((func, ret, lc, rc)) = resolve_operator(op, lt, r.ty()) else {
            return Err(self.no_operator(op, Some(lt), rt, loc));
        };
        let l = self.coerce(l.clone(), lc, CastContext::Implicit, loc)?;
        let r = self.coerce(r, rc, CastContext::Implicit, loc)?;
        Ok(Some(match (func, cmp) {
            (None, Some(op)) => Expr::Compare { op, l: Box::new(l), r: Box::new(r) },
            (Some(f), _) => Expr::Func { func: Func::DateTime(f), args: vec![l, r], ty: ret },
            (None, None) => return Err(self.no_operator(op, Some(lt), rt, loc)),
        }))
    }

    /// CURRENT_DATE, CURRENT_TIMESTAMP[(p)], LOCALTIMESTAMP[(p)], LOCALTIME[(p)].
    fn sql_value_function(&mut self, f: &pb::SqlValueFunction) -> Result<Expr> {
        use ferrogres_datum::datetime::DtFunc;
        use pb::SqlValueFunctionOp as O;
        let p = if f.typmod < 0 { -1 } else { f.typmod.min(6) };
        if let Some(e) = self.session_value_function(O::try_from(f.op).unwrap_or(O::SqlvalueFunctionOpUndefined)) {
            return Ok(e);
        }
        let (func, ty) = match O::try_from(f.op).unwrap_or(O::SqlvalueFunctionOpUndefined) {
            O::SvfopCurrentDate => (DtFunc::CurrentDate, Type::Date),
            O::SvfopCurrentTimestamp | O::SvfopCurrentTimestampN => (DtFunc::Now(p), Type::Timestamptz),
            O::SvfopLocaltimestamp | O::SvfopLocaltimestampN => (DtFunc::LocalTimestamp(p), Type::Timestamp),
            O::SvfopLocaltime | O::SvfopLocaltimeN => (DtFunc::LocalTime(p), Type::Time),
            O::SvfopCurrentTime | O::SvfopCurrentTimeN => (DtFunc::CurrentTime(p), Type::TimeTz),
            other => return Err(self.err_at(SqlError::not_supported(format!("{other:?}")), f.location)),
        };
        Ok(Expr::Func { func: Func::DateTime(func), args: vec![], ty })
    }

    /// now(), clock_timestamp(), date_part(), date_trunc() and friends.
    fn datetime_func(&mut self, name: &str, args: &mut Vec<Expr>, locs: &[i32], loc: i32) -> Result<Option<Expr>> {
        use ferrogres_datum::datetime::DtFunc;
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let (func, ty) = match (name, types.as_slice()) {
            ("now" | "transaction_timestamp", []) => (DtFunc::Now(-1), Type::Timestamptz),
            ("statement_timestamp", []) => (DtFunc::StatementTimestamp, Type::Timestamptz),
            ("clock_timestamp", []) => (DtFunc::ClockTimestamp, Type::Timestamptz),
            ("date_part" | "date_trunc", [u, t]) if u.is_string() && ferrogres_datum::datetime::is_datetime(*t) => {
                let unit = self.coerce(args[0].clone(), Type::Text, CastContext::Implicit, locs[0])?;
                let unit = if types[0] == Type::Bpchar { self.coerce(unit, Type::Text, CastContext::Implicit, locs[0])? } else { unit };
                let (arg_ty, func) = match (name, *t) {
                    ("date_part", Type::Date) => (Type::Timestamp, DtFunc::DatePart(Type::Timestamp)),
                    ("date_part", t) => (t, DtFunc::DatePart(t)),
                    ("date_trunc", Type::Timestamp) => (Type::Timestamp, DtFunc::DateTrunc(Type::Timestamp)),
                    ("date_trunc", Type::Timestamptz | Type::Date) => (Type::Timestamptz, DtFunc::DateTrunc(Type::Timestamptz)),
                    _ => return Err(self.err_at(SqlError::not_supported(format!("{name}() of type {}", t.sql_name())), loc)),
                };
                let v = self.coerce(args[1].clone(), arg_ty, CastContext::Implicit, locs[1])?;
                let ret = if name == "date_part" { Type::Float8 } else { arg_ty };
                return Ok(Some(Expr::Func { func: Func::DateTime(func), args: vec![unit, v], ty: ret }));
            }
            ("timezone", [z, t]) if z.is_string() && matches!(t, Type::Timestamp | Type::Timestamptz | Type::Date) => {
                let zone = self.coerce(args[0].clone(), Type::Text, CastContext::Implicit, locs[0])?;
                let zone = if types[0] == Type::Bpchar { self.coerce(zone, Type::Text, CastContext::Implicit, locs[0])? } else { zone };
                let from = if *t == Type::Timestamp { Type::Timestamp } else { Type::Timestamptz };
                let v = self.coerce(args[1].clone(), from, CastContext::Implicit, locs[1])?;
                let ret = if from == Type::Timestamp { Type::Timestamptz } else { Type::Timestamp };
                return Ok(Some(Expr::Func { func: Func::DateTime(DtFunc::AtTimeZone(from)), args: vec![zone, v], ty: ret }));
            }
            ("extract", [u, t]) if u.is_string() && ferrogres_datum::datetime::is_datetime(*t) => {
                let unit = self.coerce(args[0].clone(), Type::Text, CastContext::Implicit, locs[0])?;
                let v = args[1].clone();
                return Ok(Some(Expr::Func { func: Func::DateTime(DtFunc::Extract(*t)), args: vec![unit, v], ty: Type::Numeric }));
            }
            _ => return Ok(None),
        };
        Ok(Some(Expr::Func { func: Func::DateTime(func), args: std::mem::take(args), ty }))
    }

    fn func_call(&mut self, f: &pb::FuncCall, scope: &mut Scope) -> Result<Expr> {
        if matches!(f.funcname.iter().filter_map(str_of).collect::<Vec<_>>()[..], ["information_schema", "_pg_expandarray"]) && f.over.is_none() {
            return self.expand_array_call(f, scope);
        }
        let name = func_name(f).unwrap_or_default();
        if name == "pg_listening_channels" && f.args.is_empty() {
            return self.listening_channels(scope);
        }
        if let Some(e) = crate::sequence::analyze_call(self, &name, f)? {
            return Ok(e);
        }
        if let Some(e) = self.whole_row_json(f, &name, scope)? {
            return Ok(e);
        }
        if let Some(e) = self.sql_function_call(f, scope)? {
            return Ok(e);
        }
        if f.over.is_some() {
            return self.window_call(f, &name, scope);
        }
        if f.agg_within_group && matches!(name.as_str(), "rank" | "dense_rank" | "percent_rank" | "cume_dist") {
            return Err(self.err_at(SqlError::not_supported(format!("hypothetical-set aggregate {name}")), f.location));
        }
        if let Some(e) = window::requires_over(&name) {
            return Err(self.err_at(e, f.location));
        }
        let agg = self.agg_kind(&name, f)?;
        if let Some(kind) = agg {
            // The arguments first, then the level the aggregate belongs to
            // (`agg_level`): this one, or an enclosing one that computes it.
            let (in_agg, cols_from) = (scope.in_agg, self.upper_cols_len());
            let agg = self.aggregate_call(f, &name, kind, scope, true);
            scope.in_agg = in_agg;
            let agg = agg?;
            let level = self.agg_level(&agg)?;
            if level > 0 {
                return self.escape_aggregate(agg, level, f.location, scope, cols_from);
            }
            self.check_agg_context(scope, f.location)?;
            let ty = agg.ty;
            return Ok(Expr::AggRef(Self::add_aggregate(scope, agg)?, ty));
        }
        self.plain_call(f, &name, scope)
    }

    /// The aggregate `name` names (`count(*)` apart from `count(x)`), if any.
    fn agg_kind(&self, name: &str, f: &pb::FuncCall) -> Result<Option<AggKind>> {
        Ok(match name {
            "count" if f.agg_star => Some(AggKind::CountStar),
            "count" => Some(AggKind::Count),
            "sum" => Some(AggKind::Sum),
            "min" => Some(AggKind::Min),
            "max" => Some(AggKind::Max),
            "avg" => Some(AggKind::Avg),
            "array_agg" => Some(AggKind::ArrayAgg),
            "string_agg" => Some(AggKind::StringAgg),
            "bool_and" | "every" => Some(AggKind::BoolAnd),
            "bool_or" => Some(AggKind::BoolOr),
            "stddev" | "stddev_samp" => Some(AggKind::Variance { sample: true, sqrt: true }),
            "stddev_pop" => Some(AggKind::Variance { sample: false, sqrt: true }),
            "variance" | "var_samp" => Some(AggKind::Variance { sample: true, sqrt: false }),
            "var_pop" => Some(AggKind::Variance { sample: false, sqrt: false }),
            "json_agg" => Some(AggKind::JsonAgg { jsonb: false }),
            "jsonb_agg" => Some(AggKind::JsonAgg { jsonb: true }),
            "json_object_agg" => Some(AggKind::JsonObjectAgg { jsonb: false }),
            "jsonb_object_agg" => Some(AggKind::JsonObjectAgg { jsonb: true }),
            "percentile_cont" => Some(AggKind::PercentileCont),
            "percentile_disc" => Some(AggKind::PercentileDisc),
            "mode" => Some(AggKind::Mode),
            _ if f.agg_within_group => Some(AggKind::Mode),
            _ => None,
        })
    }

    /// An aggregate call's arguments, FILTER and result type; `in_agg`: its
    /// arguments are inside an aggregate (false for a window aggregate, whose
    /// arguments may hold the query's aggregates).
    fn aggregate_call(&mut self, f: &pb::FuncCall, name: &str, kind: AggKind, scope: &mut Scope, in_agg: bool) -> Result<Aggregate> {
        let name = name.to_string();
        if f.agg_within_group || crate::agg_order::is_ordered_set(kind) {
            return self.ordered_set_call(f, &name, kind, scope, in_agg);
        }
        {
            let filter = match node(&f.agg_filter) {
                Some(fl) => {
                    scope.in_agg = in_agg;
                    let r = self.bool_expr(fl, scope, "FILTER");
                    scope.in_agg = false;
                    // An aggregate in FILTER is refused as PostgreSQL words it.
                    Some(r.map_err(|mut e| {
                        if e.sqlstate() == "42803" && e.message == "aggregate function calls cannot be nested" {
                            e.message = "aggregate functions are not allowed in FILTER".into();
                        }
                        e
                    })?)
                }
                None => None,
            };
            let mut delim = None;
            let mut delim_ty = None;
            if kind == AggKind::StringAgg && f.args.len() == 2 {
                scope.in_agg = in_agg;
                let r = self.expr(f.args[1].node.as_ref().unwrap(), scope);
                scope.in_agg = false;
                let r = r?;
                delim_ty = Some(r.ty());
                let d = self.coerce(r, Type::Text, CastContext::Implicit, f.location)?;
                delim = match crate::exec::eval_const(&d)? {
                    Some(Value::Text(s)) => Some(s),
                    Some(_) => None,
                    None => return Err(self.err_at(SqlError::not_supported("string_agg with a delimiter that is not a constant"), f.location)),
                };
            }
            let arg = if kind == AggKind::CountStar {
                None
            } else {
                let two = matches!(kind, AggKind::StringAgg | AggKind::JsonObjectAgg { .. });
                if f.args.len() != 1 && !(two && f.args.len() == 2) || matches!(kind, AggKind::JsonObjectAgg { .. }) && f.args.len() != 2 {
                    let types = self.agg_arg_types(f, scope, in_agg)?;
                    return Err(self.unknown_function(&name, &types, f.location));
                }
                scope.in_agg = in_agg;
                let r = self.expr(f.args[0].node.as_ref().unwrap(), scope);
                scope.in_agg = false;
                let mut e = r?;
                if e.ty() == Type::Unknown && matches!(kind, AggKind::JsonAgg { .. }) {
                    return Err(self.err_at(SqlError::new(b"42804", "could not determine polymorphic type because input has type unknown"), -1));
                }
                if e.ty() == Type::Unknown && kind != AggKind::Count && !matches!(kind, AggKind::JsonObjectAgg { .. }) && !(kind == AggKind::StringAgg && f.args.len() == 2) {
                    return Err(self.err_at(
                        SqlError::new(b"42725", format!("function {name}(unknown) is not unique"))
                            .with_hint("Could not choose a best candidate function. You might need to add explicit type casts."),
                        f.location,
                    ));
                }
                if e.ty() == Type::Unknown {
                    e = self.coerce(e, Type::Text, CastContext::Implicit, f.location)?;
                }
                Some(e)
            };
            let ty = match (kind, arg.as_ref().map(|a| a.ty())) {
                (AggKind::CountStar | AggKind::Count, _) => Type::Int8,
                (AggKind::Sum, Some(Type::Int2 | Type::Int4)) => Type::Int8,
                (AggKind::Sum, Some(Type::Float8)) => Type::Float8,
                (AggKind::Sum, Some(Type::Float4)) => Type::Float4,
                (AggKind::Sum, Some(Type::Int8 | Type::Numeric)) => Type::Numeric,
                (AggKind::Min | AggKind::Max, Some(t)) if !matches!(t, Type::Bool | Type::Uuid | Type::Json | Type::Jsonb) => t,
                (AggKind::Avg, Some(Type::Float8 | Type::Float4)) => Type::Float8,
                (AggKind::Sum | AggKind::Avg, Some(Type::Interval)) => Type::Interval,
                (AggKind::ArrayAgg, Some(t)) if ferrogres_datum::array::array_of(t).is_some() => ferrogres_datum::array::array_of(t).expect("checked"),
                (AggKind::StringAgg, Some(t)) if t.is_string() => Type::Text,
                (AggKind::BoolAnd | AggKind::BoolOr, Some(Type::Bool)) => Type::Bool,
                (AggKind::Avg, Some(Type::Int2 | Type::Int4 | Type::Int8 | Type::Numeric)) => Type::Numeric,
                (AggKind::Variance { .. }, Some(Type::Int2 | Type::Int4 | Type::Int8 | Type::Numeric)) => Type::Numeric,
                (AggKind::Variance { .. }, Some(Type::Float4 | Type::Float8)) => Type::Float8,
                (AggKind::JsonAgg { jsonb } | AggKind::JsonObjectAgg { jsonb }, Some(_)) => if jsonb { Type::Jsonb } else { Type::Json },
                (_, Some(t)) => {
                    let types: Vec<Type> = std::iter::once(t).chain(delim_ty).collect();
                    return Err(self.unknown_function(&name, &types, f.location));
                }
                (_, None) => return Err(SqlError::internal("aggregate without argument")),
            };
            let arg2 = match kind {
                AggKind::JsonObjectAgg { .. } => Some(self.json_object_agg_value(f, scope, in_agg)?),
                _ => None,
            };
            let order = self.agg_order(f, &arg.iter().chain(arg2.iter()).collect::<Vec<_>>(), scope, in_agg)?;
            Ok(Aggregate { kind, arg, ty, filter, distinct: f.agg_distinct, delim, arg2, order })
        }
    }

    /// A call of a function that is neither an aggregate nor a window function.
    fn plain_call(&mut self, f: &pb::FuncCall, name: &str, scope: &mut Scope) -> Result<Expr> {
        let name = name.to_string();
        if f.agg_star || f.agg_distinct {
            return Err(self.err_at(SqlError::new(b"42809", format!("{name}(*) specified, but {name} is not an aggregate function")), f.location));
        }
        if let Some(e) = self.not_an_aggregate(f, &name, scope)? {
            return Err(e);
        }
        let mut args = Vec::new();
        let mut arg_locs = Vec::new();
        for a in &f.args {
            if let Some(a) = a.node.as_ref() {
                args.push(self.expr(a, scope)?);
                arg_locs.push(location(a));
            }
        }
        if name == "pg_typeof" && args.len() == 1 {
            // regtype is not a type here: the name format_type shows, as text.
            return Ok(Expr::Const(Value::Text(args[0].ty().sql_name().to_string()), Type::Text));
        }
        if let Some(e) = self.datetime_func(&name, &mut args, &arg_locs, f.location)? {
            return Ok(e);
        }
        if let Some(e) = self.array_func(&name, &mut args, &arg_locs, f.location)? {
            return Ok(e);
        }
        if let Some(e) = self.array_srf(&name, &mut args, &arg_locs, f, scope)? {
            return Ok(e);
        }
        if let Some(e) = self.catalog_func(&name, &mut args, &arg_locs, f.location)? {
            return Ok(e);
        }
        if matches!(name.as_str(), "ferrogres_catalog_scans" | "ferrogres_plan_analyses") && args.is_empty() {
            // ferrogres-specific counters of this backend ([`crate::catcache`]):
            // catalog heap scans started, plan analyses begun, before this
            // statement; read at analysis, so the statement's plan is not kept.
            crate::plan_cache::mark_uncacheable();
            let n = if name == "ferrogres_catalog_scans" {
                crate::catcache::catalog_scans(self.backend)
            } else {
                crate::catcache::plan_analyses(self.backend)
            };
            return Ok(Expr::Const(Value::Int8(n as i64), Type::Int8));
        }
        if let Some(e) = self.numeric_func(&name, &mut args, &arg_locs)? {
            return Ok(e);
        }
        if matches!(name.as_str(), "length" | "octet_length") && args.len() == 1 && args[0].ty() == Type::Bytea {
            return Ok(Expr::Func { func: Func::OctetLength, args, ty: Type::Int4 });
        }
        if let Some(e) = self.builtin_call(&name, &mut args, &arg_locs, f, scope)? {
            return Ok(e);
        }
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let (func, sig, ret): (Func, &[Type], Type) = match (name.as_str(), args.len()) {
            ("version", 0) => (Func::Version, &[], Type::Text),
            ("pg_backend_pid", 0) => (Func::BackendPid, &[], Type::Int4),
            ("txid_current", 0) => (Func::TxidCurrent, &[], Type::Int8),
            ("txid_current_if_assigned", 0) => (Func::TxidCurrentIfAssigned, &[], Type::Int8),
            ("xid", 1) if types[0] == Type::Xid8 => {
                let arg = Box::new(args.pop().expect("one argument"));
                return Ok(Expr::Cast { arg, from: Type::Xid8, to: Type::Xid, typmod: -1, explicit: true });
            }
            ("pg_current_snapshot", 0) => (Func::CurrentSnapshot, &[], Type::PgSnapshot),
            ("txid_current_snapshot", 0) => (Func::CurrentSnapshot, &[], Type::TxidSnapshot),
            ("pg_current_xact_id", 0) => (Func::CurrentXactId, &[], Type::Xid8),
            ("pg_current_xact_id_if_assigned", 0) => (Func::CurrentXactIdIfAssigned, &[], Type::Xid8),
            ("pg_xact_status", 1) => (Func::XactStatus, &[Type::Xid8], Type::Text),
            ("txid_status", 1) => (Func::XactStatus, &[Type::Int8], Type::Text),
            ("pg_sleep", 1) => (Func::Sleep, &[Type::Float8], Type::Void),
            ("set_config", 3) => (Func::SetConfig, &[Type::Text, Type::Text, Type::Bool], Type::Text),
            ("current_setting", 1) => (Func::CurrentSetting, &[Type::Text], Type::Text),
            ("length" | "char_length" | "character_length", 1) => (Func::Length, &[Type::Text], Type::Int4),
            ("upper", 1) => (Func::Upper, &[Type::Text], Type::Text),
            ("lower", 1) => (Func::Lower, &[Type::Text], Type::Text),
            ("abs", 1) if types[0].is_numeric() => {
                let t = types[0];
                return Ok(Expr::Func { func: Func::Abs, args, ty: t });
            }
            ("abs", 1) if types[0] == Type::Unknown => (Func::Abs, &[Type::Float8], Type::Float8),
            _ => match crate::locking::lookup_func(&name, args.len()) {
                Some((lf, sig, ret)) => (Func::Lock(lf), sig, ret),
                None => match crate::walstat::lookup_func(&name, args.len()) {
                    Some((wf, sig, ret)) => (Func::Wal(wf), sig, ret),
                    None => match crate::statviews::lookup_func(&name, args.len()) {
                        Some((sf, sig, ret)) => (Func::Stat(sf), sig, ret),
                        None => return Err(self.unknown_function(&name, &types, f.location)),
                    },
                },
            },
        };
        let mut out = Vec::new();
        for ((a, want), loc) in args.into_iter().zip(sig).zip(arg_locs) {
            let t = a.ty();
            if !(is_type(t, *want) || types::cast_allowed(t, *want, CastContext::Implicit)) {
                return Err(self.unknown_function(&name, &types, f.location));
            }
            out.push(if t.is_string() && *want == Type::Text && t != Type::Unknown && t != Type::Bpchar { a } else { self.coerce(a, *want, CastContext::Implicit, loc)? });
        }
        Ok(Expr::Func { func, args: out, ty: ret })
    }

    fn unknown_function(&self, name: &str, types: &[Type], loc: i32) -> SqlError {
        let args: Vec<&str> = types.iter().map(|t| t.sql_name()).collect();
        self.err_at(
            SqlError::new(b"42883", format!("function {name}({}) does not exist", args.join(", ")))
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
            loc,
        )
    }

    fn insert(&mut self, s: &pb::InsertStmt) -> Result<Statement> {
        if s.with_clause.is_some() {
            return Err(SqlError::not_supported("WITH"));
        }
        if s.on_conflict_clause.is_some() {
            return self.insert_on_conflict(s);
        }
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("INSERT without relation"))?;
        let table = self.range_table_locked(rv, ferrogres_engine::lmgr::lock::LockMode::RowExclusive)?;
        self.require_dml_tracked(table.oid, &NodeEnum::InsertStmt(Box::new(s.clone())));
        // Target columns, in the order given (default: all).
        let mut cols: Vec<usize> = Vec::new();
        for c in &s.cols {
            let Some(NodeEnum::ResTarget(rt)) = &c.node else { continue };
            if !rt.indirection.is_empty() {
                return Err(self.err_at(SqlError::not_supported("subscripts or fields in INSERT targets"), rt.location));
            }
            let Some(i) = table.columns.iter().position(|x| x.name == rt.name) else {
                return Err(self.err_at(
                    SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", rt.name, table.name)),
                    rt.location,
                ));
            };
            if cols.contains(&i) {
                return Err(self.err_at(SqlError::new(b"42701", format!("column \"{}\" specified more than once", rt.name)), rt.location));
            }
            cols.push(i);
        }
        let explicit_cols = !s.cols.is_empty();
        if !explicit_cols {
            cols = (0..table.columns.len()).filter(|&i| !table.columns[i].is_dropped()).collect();
        }
        let mut rows = Vec::new();
        let sel = match node(&s.select_stmt) {
            Some(NodeEnum::SelectStmt(sel)) => Some(sel),
            None => None,
            _ => return Err(SqlError::not_supported("this INSERT source")),
        };
        // The inserted columns (insertedCols): those given a value, the
        // column list's (or, without one, as many as VALUES gives); a column
        // left to its default is not inserted. DEFAULT VALUES: none.
        let given = match sel {
            None => 0,
            Some(sel) if !sel.values_lists.is_empty() => sel
                .values_lists
                .iter()
                .map(|l| match &l.node {
                    Some(NodeEnum::List(l)) => l.items.len(),
                    _ => 0,
                })
                .max()
                .unwrap_or(0),
            Some(_) => cols.len(),
        };
        let given = if explicit_cols { cols.len() } else { given.min(cols.len()) };
        for &ci in &cols[..given] {
            self.require_column(table.oid, crate::acl::INSERT, ci as i16 + 1);
        }
        let lists: Vec<&Vec<pb::Node>> = match sel {
            None => vec![], // DEFAULT VALUES
            Some(sel) if !sel.values_lists.is_empty() => sel
                .values_lists
                .iter()
                .filter_map(|l| match &l.node {
                    Some(NodeEnum::List(l)) => Some(&l.items),
                    _ => None,
                })
                .collect(),
            Some(sel) => {
                for &ci in &cols {
                    if crate::identity::check_insert(&table, ci, s.r#override)? {
                        return Err(SqlError::not_supported("OVERRIDING USER VALUE with INSERT ... SELECT"));
                    }
                }
                return crate::insert_select::analyze(self, s, table, cols, explicit_cols, sel);
            }
        };
        let mut scope = Scope::new(None);
        scope.agg_place = Some("VALUES");
        if lists.len() > 1 {
            scope.no_srf = Some("VALUES");
        }
        let default_row = |table: &Table| -> Vec<Expr> {
            (0..table.columns.len()).map(|i| crate::constraints::default_expr(table, i)).collect()
        };
        if sel.is_none() {
            rows.push(default_row(&table));
        }
        for items in lists {
            if items.len() > cols.len() {
                let loc = location(items[cols.len()].node.as_ref().unwrap());
                return Err(self.err_at(SqlError::new(b"42601", "INSERT has more expressions than target columns"), loc));
            }
            if items.len() < cols.len() && explicit_cols {
                let loc = s.cols.get(items.len()).and_then(|n| n.node.as_ref()).map_or(-1, location);
                return Err(self.err_at(SqlError::new(b"42601", "INSERT has more target columns than expressions"), loc));
            }
            let mut row = default_row(&table);
            for (item, &ci) in items.iter().zip(&cols) {
                let n = item.node.as_ref().unwrap();
                if matches!(n, NodeEnum::SetToDefault(_)) || crate::identity::check_insert(&table, ci, s.r#override)? {
                    continue;
                }
                let col = &table.columns[ci];
                let e = self.expr(n, &mut scope)?;
                let e = match (e.ty(), &e) {
                    (Type::Unknown | Type::Numeric, Expr::Const(..)) | (Type::Unknown, Expr::Param(..)) => {
                        self.coerce_typmod(e, col.ty, col.typmod, CastContext::Assignment, location(n))?
                    }
                    (t, _) if t == col.ty && !(t.typmod_matters() && col.typmod >= 0) => e,
                    (t, _) => {
                        if !types::cast_allowed(t, col.ty, CastContext::Assignment) {
                            return Err(self.err_at(
                                SqlError::new(
                                    b"42804",
                                    format!("column \"{}\" is of type {} but expression is of type {}", col.name, col.ty.name_with_typmod(col.typmod), t.sql_name()),
                                )
                                .with_hint("You will need to rewrite or cast the expression."),
                                location(n),
                            ));
                        }
                        Expr::Cast { arg: Box::new(e), from: t, to: col.ty, typmod: col.typmod, explicit: false }
                    }
                };
                row[ci] = e;
            }
            rows.push(row);
        }
        if rows.iter().flatten().any(crate::project_set::contains_srf) {
            return self.insert_values_srf(table, rows, s);
        }
        let returning = self.returning(s.returning_clause.as_ref(), &table)?;
        Ok(Statement::Insert { table, rows, returning })
    }

    /// RETURNING targets over a row of `table` (for statements analyzed outside this module).
    pub(crate) fn returning_targets(&mut self, rc: Option<&pb::ReturningClause>, table: &Table) -> Result<Vec<Target>> {
        self.returning(rc, table)
    }

    /// An expression that sees no columns (function arguments in FROM).
    /// A CHECK constraint's expression over the row of `table`.
    pub(crate) fn check_expr(&mut self, n: &NodeEnum, table: &Table) -> Result<Expr> {
        let mut scope = Scope::new(Some((table, table.name.clone())));
        self.bool_expr(n, &mut scope, "CHECK")
    }

    /// `e` converted to a column's type as an assignment does.
    pub(crate) fn coerce_assignment(&mut self, e: Expr, to: Type, typmod: i32) -> Result<Expr> {
        self.coerce_typmod(e, to, typmod, CastContext::Assignment, -1)
    }

    pub(crate) fn scalar_expr(&mut self, n: &NodeEnum) -> Result<Expr> {
        let mut scope = Scope::new(None);
        self.expr(n, &mut scope)
    }

    /// An expression of this query level that reads no column of it but may
    /// read the enclosing levels `outer` (a function's arguments in FROM).
    pub(crate) fn outer_expr(&mut self, n: &NodeEnum, outer: &[std::rc::Rc<from::Namespace>]) -> Result<Expr> {
        let mut scope = Scope::new(None);
        scope.outer = outer.to_vec();
        scope.agg_place = Some("functions in FROM");
        self.expr(n, &mut scope)
    }

    fn returning(&mut self, rc: Option<&pb::ReturningClause>, table: &Table) -> Result<Vec<Target>> {
        let Some(rc) = rc else { return Ok(vec![]) };
        if !rc.options.is_empty() {
            return Err(SqlError::not_supported("RETURNING OLD/NEW"));
        }
        // RETURNING may name the system columns of the version written (INSERT's too).
        let with_system;
        let table = if names_system_column(self.sql) && table.storage.system.is_none() {
            with_system = catalog::with_system_columns(table.clone());
            &with_system
        } else {
            table
        };
        let mut scope = Scope::reading(table, table.name.clone());
        scope.agg_place = Some("RETURNING");
        self.targets(&rc.exprs, &mut scope)
    }

    fn delete(&mut self, s: &pb::DeleteStmt) -> Result<Statement> {
        if !s.using_clause.is_empty() {
            return self.delete_using(s);
        }
        if s.with_clause.is_some() || !s.using_clause.is_empty() {
            return Err(SqlError::not_supported("DELETE with WITH or USING"));
        }
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("DELETE without relation"))?;
        let table = self.scanned_table_locked(rv, ferrogres_engine::lmgr::lock::LockMode::RowExclusive)?;
        self.require_dml_tracked(table.oid, &NodeEnum::DeleteStmt(Box::new(s.clone())));
        let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
        let filter = match node(&s.where_clause) {
            Some(w) => {
                let mut scope = Scope::reading(&table, refname);
                Some(self.bool_expr(w, &mut scope, "WHERE")?)
            }
            None => None,
        };
        let returning = self.returning(s.returning_clause.as_ref(), &table)?;
        Ok(Statement::Delete { table, filter, returning, paths: Default::default() })
    }

    fn update(&mut self, s: &pb::UpdateStmt) -> Result<Statement> {
        if !s.from_clause.is_empty() {
            return self.update_from(s);
        }
        if s.with_clause.is_some() || !s.from_clause.is_empty() {
            return Err(SqlError::not_supported("UPDATE with WITH or FROM"));
        }
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("UPDATE without relation"))?;
        let table = self.scanned_table_locked(rv, ferrogres_engine::lmgr::lock::LockMode::RowExclusive)?;
        self.require_dml_tracked(table.oid, &NodeEnum::UpdateStmt(Box::new(s.clone())));
        let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
        let mut sets: Vec<(usize, Expr)> = Vec::new();
        for t in &s.target_list {
            let Some(NodeEnum::ResTarget(rt)) = &t.node else { continue };
            if !rt.indirection.is_empty() {
                return Err(self.err_at(SqlError::not_supported("subscripts or fields in UPDATE targets"), rt.location));
            }
            if crate::rowio::is_system_column(&rt.name) {
                return Err(self.err_at(SqlError::new(b"0A000", format!("cannot assign to system column \"{}\"", rt.name)), rt.location));
            }
            let Some(ci) = table.columns.iter().position(|c| c.name == rt.name) else {
                return Err(self.err_at(
                    SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", rt.name, table.name)),
                    rt.location,
                ));
            };
            if sets.iter().any(|(i, _)| *i == ci) {
                return Err(SqlError::new(b"42601", format!("multiple assignments to same column \"{}\"", rt.name)));
            }
            self.require_column(table.oid, crate::acl::UPDATE, ci as i16 + 1);
            let col = table.columns[ci].clone();
            let Some(val) = node(&rt.val) else { continue };
            let e = if matches!(val, NodeEnum::SetToDefault(_)) {
                crate::constraints::default_expr(&table, ci)
            } else {
                crate::identity::check_update(&table, ci)?;
                let mut scope = Scope::reading(&table, refname.clone());
                scope.windows = window::Windows::Refused("UPDATE");
                scope.agg_place = Some("UPDATE");
                let e = self.expr(val, &mut scope)?;
                match (e.ty(), &e) {
                    (Type::Unknown | Type::Numeric, Expr::Const(..)) | (Type::Unknown, Expr::Param(..)) => {
                        self.coerce_typmod(e, col.ty, col.typmod, CastContext::Assignment, location(val))?
                    }
                    (t, _) if t == col.ty && !(t.typmod_matters() && col.typmod >= 0) => e,
                    (t, _) => {
                        if !types::cast_allowed(t, col.ty, CastContext::Assignment) {
                            return Err(self.err_at(
                                SqlError::new(
                                    b"42804",
                                    format!(
                                        "column \"{}\" is of type {} but expression is of type {}",
                                        col.name,
                                        col.ty.name_with_typmod(col.typmod),
                                        t.sql_name()
                                    ),
                                )
                                .with_hint("You will need to rewrite or cast the expression."),
                                location(val),
                            ));
                        }
                        Expr::Cast { arg: Box::new(e), from: t, to: col.ty, typmod: col.typmod, explicit: false }
                    }
                }
            };
            sets.push((ci, e));
        }
        let filter = match node(&s.where_clause) {
            Some(w) => {
                let mut scope = Scope::reading(&table, refname);
                Some(self.bool_expr(w, &mut scope, "WHERE")?)
            }
            None => None,
        };
        let returning = self.returning(s.returning_clause.as_ref(), &table)?;
        Ok(Statement::Update { table, sets, filter, returning, paths: Default::default() })
    }

    fn create(&mut self, s: &pb::CreateStmt) -> Result<Statement> {
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("CREATE TABLE without relation"))?;
        if !s.inh_relations.is_empty() || s.partspec.is_some() || s.partbound.is_some() || s.of_typename.is_some() {
            return Err(SqlError::not_supported("inheritance, partitioning and typed tables"));
        }
        let temp = crate::namespace::temp_tables::check_create(rv, s.oncommit)?;
        if !s.constraints.is_empty() {
            return Err(SqlError::not_supported("table constraints"));
        }
        if !s.tablespacename.is_empty() {
            return Err(SqlError::not_supported("table storage options and tablespaces"));
        }
        // Storage parameters: validated; fillfactor accepted but not honoured (crate::reloptions).
        crate::reloptions::table_options(&s.options)?;
        let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
        let namespace = crate::namespace::creation_namespace(self.backend, self.snap, schema, temp, &rv.relname)
            .map_err(|e| if matches!(e.sqlstate(), "3F000" | "42P16") { self.err_at(e, rv.location) } else { e })?;
        crate::acl::check_create_in(self.backend, self.snap, namespace).map_err(|e| self.err_at(e, rv.location))?;
        let mut columns: Vec<Column> = Vec::new();
        let mut constraints: Vec<(pb::Constraint, Option<String>)> = Vec::new();
        let mut extras = crate::constraints::CreateExtras::default();
        let mut checks: Vec<(pb::Constraint, Option<usize>)> = Vec::new();
        let mut fkeys: Vec<(pb::Constraint, Option<usize>)> = Vec::new();
        for elt in &s.table_elts {
            match elt.node.as_ref() {
                Some(NodeEnum::ColumnDef(cd)) => {
                    if columns.iter().any(|c| c.name == cd.colname) {
                        return Err(SqlError::new(b"42701", format!("column \"{}\" specified more than once", cd.colname)));
                    }
                    let serial = ddl_create::serial_type(cd.type_name.as_ref());
                    let (ty, typmod) = match serial {
                        Some(t) => (t, -1),
                        None => self.type_name(cd.type_name.as_ref())?,
                    };
                    let mut col = Column { name: cd.colname.clone(), ty, typmod, not_null: cd.is_not_null, default: None };
                    if serial.is_some() {
                        ddl_create::serial_column(self, namespace, &rv.relname, columns.len(), &mut col, &cd.constraints, &mut extras)?;
                    }
                    for c in &cd.constraints {
                        let Some(NodeEnum::Constraint(c)) = &c.node else { continue };
                        use pb::ConstrType as C;
                        match C::try_from(c.contype).unwrap_or(C::Undefined) {
                            C::ConstrNotnull => col.not_null = true,
                            C::ConstrNull => col.not_null = false,
                            C::ConstrDefault => {
                                let Some(raw) = node(&c.raw_expr) else { continue };
                                let mut scope = Scope::new(None);
                                let e = self.expr(raw, &mut scope)?;
                                let e = self.coerce_typmod(e, ty, typmod, CastContext::Assignment, location(raw))?;
                                match crate::exec::eval_const(&e).map_err(|e| self.err_at(e, location(raw)))? {
                                    Some(v) => col.default = (!v.is_null()).then_some(v),
                                    None => extras.defaults.push((columns.len(), crate::constraints::deparse_expr(raw)?)),
                                }
                            }
                            C::ConstrPrimary | C::ConstrUnique => constraints.push(((**c).clone(), Some(cd.colname.clone()))),
                            C::ConstrCheck => checks.push(((**c).clone(), Some(columns.len()))),
                            C::ConstrForeign => fkeys.push(((**c).clone(), Some(columns.len()))),
                            C::ConstrIdentity => crate::identity::create_table_column(self, &rv.relname, columns.len(), &mut col, c, &mut extras)?,
                            other => return Err(self.err_at(SqlError::not_supported(format!("column constraint {other:?}")), c.location)),
                        }
                    }
                    columns.push(col);
                }
                Some(NodeEnum::Constraint(c))
                    if matches!(pb::ConstrType::try_from(c.contype), Ok(pb::ConstrType::ConstrPrimary | pb::ConstrType::ConstrUnique)) =>
                {
                    constraints.push(((**c).clone(), None))
                }
                Some(NodeEnum::Constraint(c)) if matches!(pb::ConstrType::try_from(c.contype), Ok(pb::ConstrType::ConstrCheck)) => {
                    checks.push(((**c).clone(), None))
                }
                Some(NodeEnum::Constraint(c)) if matches!(pb::ConstrType::try_from(c.contype), Ok(pb::ConstrType::ConstrForeign)) => {
                    fkeys.push(((**c).clone(), None))
                }
                _ => return Err(SqlError::not_supported("table constraints")),
            }
        }
        if columns.len() > 1600 {
            return Err(SqlError::new(b"54011", "tables can have at most 1600 columns"));
        }
        for c in &columns {
            crate::rowio::check_not_system_column(&c.name)?;
        }
        ddl_create::checks(self, namespace, &rv.relname, &columns, checks, &mut extras)?;
        for (c, col) in fkeys {
            let spec = crate::foreign_key::analyze(self, &rv.relname, &columns, &c, col)?;
            extras.fkeys.push(spec);
        }
        if !extras.is_empty() {
            let base = match self.create_with_constraints(namespace, rv.relname.clone(), columns, s.if_not_exists, constraints)? {
                Statement::Index(base) => base,
                _ => return Err(SqlError::internal("CREATE TABLE analysis")),
            };
            return Ok(ddl(crate::constraints::DdlCmd::CreateTable { base, extras }));
        }
        if !constraints.is_empty() {
            return self.create_with_constraints(namespace, rv.relname.clone(), columns, s.if_not_exists, constraints);
        }
        Ok(Statement::CreateTable { namespace, name: rv.relname.clone(), columns, if_not_exists: s.if_not_exists })
    }

    fn drop(&mut self, s: &pb::DropStmt) -> Result<Statement> {
        if s.remove_type == pb::ObjectType::ObjectIndex as i32 {
            return self.drop_index(s);
        }
        if s.remove_type == pb::ObjectType::ObjectSequence as i32 {
            return Ok(ddl(crate::constraints::DdlCmd::Seq(crate::sequence::analyze_drop(s)?)));
        }
        if s.remove_type == pb::ObjectType::ObjectSchema as i32 {
            return Ok(ddl(crate::constraints::DdlCmd::Schema(crate::namespace::ddl::analyze_drop(s)?)));
        }
        if s.remove_type != pb::ObjectType::ObjectTable as i32 {
            return Err(SqlError::not_supported("DROP of this object type"));
        }
        if s.behavior == pb::DropBehavior::DropCascade as i32 {
            return Err(SqlError::not_supported("DROP ... CASCADE"));
        }
        let mut tables = Vec::new();
        for o in &s.objects {
            let Some(NodeEnum::List(l)) = &o.node else { continue };
            let names: Vec<String> = l.items.iter().filter_map(str_of).map(str::to_string).collect();
            match names.as_slice() {
                [n] => tables.push((None, n.clone())),
                [s, n] => tables.push((Some(s.clone()), n.clone())),
                _ => return Err(SqlError::not_supported("cross-database references")),
            }
        }
        Ok(Statement::DropTables { tables, missing_ok: s.missing_ok })
    }
}

fn ddl(cmd: crate::constraints::DdlCmd) -> Statement {
    Statement::Ddl(Box::new(cmd))
}

/// A qualifier `q` that names no FROM entry; when it names the table that is
/// there under an alias, PostgreSQL says so.
fn missing_from_entry(q: &str, table: &str, refname: &str) -> SqlError {
    if q == table && refname != table {
        return SqlError::new(b"42P01", format!("invalid reference to FROM-clause entry for table \"{q}\""))
            .with_hint(format!("Perhaps you meant to reference the table alias \"{refname}\"."));
    }
    SqlError::new(b"42P01", format!("missing FROM-clause entry for table \"{q}\""))
}

fn typmod_of(e: &Expr) -> i32 {
    match e {
        Expr::Cast { typmod, .. } => *typmod,
        _ => -1,
    }
}

fn func_name(f: &pb::FuncCall) -> Option<String> {
    let names: Vec<&str> = f.funcname.iter().filter_map(str_of).collect();
    match names.as_slice() {
        ["pg_catalog", n] | [n] => Some(n.to_string()),
        _ => None,
    }
}

/// ASC/DESC and NULLS FIRST/LAST of one ORDER BY item (NULLS FIRST is the
/// default for DESC, as in PostgreSQL); ORDER BY ... USING is 0A000.
fn sort_direction(sb: &pb::SortBy) -> Result<(bool, bool)> {
    let dir = pb::SortByDir::try_from(sb.sortby_dir).unwrap_or(pb::SortByDir::SortbyDefault);
    if dir == pb::SortByDir::SortbyUsing {
        return Err(SqlError::not_supported("ORDER BY USING"));
    }
    let desc = dir == pb::SortByDir::SortbyDesc;
    let nulls_first = match pb::SortByNulls::try_from(sb.sortby_nulls).unwrap_or(pb::SortByNulls::SortbyNullsDefault) {
        pb::SortByNulls::SortbyNullsFirst => true,
        pb::SortByNulls::SortbyNullsLast => false,
        _ => desc,
    };
    Ok((desc, nulls_first))
}
