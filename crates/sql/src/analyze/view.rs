//! Analysis of CREATE VIEW and of view references ([`crate::view`]).
//!
//! A view named in FROM is expanded here into its query, analyzed again (with
//! its own text for positions, under the `search_path` stored with it, with
//! no enclosing query levels), and read as a subquery whose columns carry the
//! view's column names. INSERT into a view PostgreSQL would update
//! automatically (a simple one-table view) is rewritten onto its table, as
//! are UPDATE and DELETE ([`super::view_dml`]); MERGE of such a view is 0A000
//! for now; a view PostgreSQL would not update gets its 55000 "cannot update
//! view" with the DETAIL saying why.
//!
//! Views are resolved by name when they are used, so a view can come to read
//! itself (CREATE OR REPLACE VIEW va AS ... FROM vb, where vb reads va; or a
//! rename). Expansion keeps the chain of views being expanded
//! ([`ViewContext::chain`]): a view met again inside its own expansion is
//! PostgreSQL's 42P17 `infinite recursion detected in rules for relation
//! "va"`, which PostgreSQL raises for the same cycle (its views are bound to
//! OIDs, but CREATE OR REPLACE VIEW forms such a cycle there too). A long
//! chain without a cycle ends in 54001 (the stack-depth check) when it is
//! deeper than `max_stack_depth` allows.
//!
//! CREATE VIEW and the updatability checks read a view they name through its
//! stored columns instead of expanding it ([`ViewContext::opaque`]), as
//! PostgreSQL's parse analysis does (its rewriter expands views only when a
//! query runs): creating the n-th view of a chain costs one level, not n.

use super::{node, str_of, Analyzer};
use crate::catalog::Column;
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::{Query, Statement};
use ferrogres_datum::types::Type;
use crate::view::{ViewCmd, ViewDef};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// How an analysis reads the views it names.
#[derive(Clone, Debug, Default)]
pub struct ViewContext {
    /// OIDs of the views being expanded around this analysis, outermost first.
    pub chain: Vec<u32>,
    /// Read a named view as its stored columns (no rows; nothing below it is
    /// analyzed): CREATE VIEW and the updatability checks, which need the
    /// view's row type only.
    pub opaque: bool,
    /// The role privileges are checked as for the relations this analysis
    /// reads: the owner of the view being expanded; `None`: the current user
    /// ([`crate::acl`]).
    pub check_as: Option<u32>,
    /// The last [`Analyzer::view_ref`] answer, by (schema, name, search_path):
    /// a FROM item is looked up twice (the single-table path's test, then the
    /// item itself), and each lookup scans the catalogs.
    last_lookup: std::cell::RefCell<Option<(ViewKey, Option<ViewDef>)>>,
}

type ViewKey = (String, String, String);

/// Restores the session's `search_path` when a view's expansion ends.
pub(super) struct PathGuard(pub(super) Option<String>);

impl Drop for PathGuard {
    fn drop(&mut self) {
        if let Some(p) = self.0.take() {
            crate::namespace::set_thread_search_path(&p);
        }
    }
}

impl<'a> Analyzer<'a> {
    /// CREATE [OR REPLACE] [TEMP] VIEW name [(cols)] AS query.
    pub(crate) fn create_view(&mut self, s: &pb::ViewStmt) -> Result<Statement> {
        let rv = s.view.as_ref().ok_or_else(|| SqlError::internal("CREATE VIEW without a name"))?;
        let Some(NodeEnum::SelectStmt(sel)) = node(&s.query) else {
            return Err(SqlError::not_supported("this view query"));
        };
        if sel.into_clause.is_some() {
            return Err(SqlError::new(b"0A000", "views must not contain SELECT INTO"));
        }
        let check_option = self.view_check_option(s, sel)?;
        let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
        let q = self.select_opaque(sel)?;
        let mut columns: Vec<Column> = q
            .targets
            .iter()
            .map(|t| {
                let ty = match t.expr.ty() {
                    Type::Unknown => Type::Text,
                    ty => ty,
                };
                Column { name: t.name.clone(), ty, typmod: t.typmod, not_null: false, default: None }
            })
            .collect();
        if s.aliases.len() > columns.len() {
            return Err(SqlError::new(b"42601", "CREATE VIEW specifies more column names than columns"));
        }
        for (c, a) in columns.iter_mut().zip(&s.aliases) {
            if let Some(n) = str_of(a) {
                c.name = n.to_string();
            }
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].iter().any(|d| d.name == c.name) {
                return Err(SqlError::new(b"42701", format!("column \"{}\" specified more than once", c.name)));
            }
        }
        let text = NodeEnum::SelectStmt(sel.clone())
            .deparse(Default::default())
            .map_err(|e| SqlError::internal(format!("deparse of the view query: {e}")))?;
        // The relations the query names (tables and views), resolved now.
        let mut deps = Vec::new();
        let mut reads_temp = false;
        for (n, _, _, _) in NodeEnum::SelectStmt(sel.clone()).nodes() {
            if let pg_query::NodeRef::RangeVar(r) = n {
                let sch = (!r.schemaname.is_empty()).then_some(r.schemaname.as_str());
                if let Ok(Some(ns)) = crate::namespace::relation_namespace(self.backend, self.snap, sch, &r.relname) {
                    if let Some((oid, _)) = crate::index::find_relation(self.backend, self.snap, ns, &r.relname)? {
                        if !deps.contains(&oid) {
                            deps.push(oid);
                        }
                        reads_temp |= crate::namespace::is_temp_namespace(self.backend, self.snap, ns)?;
                    }
                }
            }
        }
        let temp = rv.relpersistence == "t" || reads_temp;
        let namespace = crate::namespace::creation_namespace(self.backend, self.snap, schema, temp, &rv.relname)
            .map_err(|e| if e.sqlstate() == "3F000" && schema.is_some() { e.at(self.sql, rv.location) } else { e })?;
        crate::acl::check_create_in(self.backend, self.snap, namespace).map_err(|e| e.at(self.sql, rv.location))?;
        let cmd = ViewCmd::Create {
            namespace,
            name: rv.relname.clone(),
            replace: s.replace,
            sql: text,
            search_path: crate::view::join_options(&crate::namespace::thread_search_path(), check_option),
            columns,
            deps,
            temp_notice: reads_temp && rv.relpersistence != "t",
        };
        Ok(Statement::Ddl(Box::new(crate::constraints::DdlCmd::View(cmd))))
    }

    /// DROP VIEW, and DROP TABLE ... CASCADE (which drops the views reading the tables).
    pub(crate) fn drop_view(&mut self, s: &pb::DropStmt) -> Result<Statement> {
        let mut names = Vec::new();
        for o in &s.objects {
            let Some(NodeEnum::List(l)) = &o.node else { continue };
            let parts: Vec<String> = l.items.iter().filter_map(str_of).map(str::to_string).collect();
            match parts.as_slice() {
                [n] => names.push((None, n.clone())),
                [sch, n] => names.push((Some(sch.clone()), n.clone())),
                _ => return Err(SqlError::not_supported("cross-database references")),
            }
        }
        let cmd = if s.remove_type == pb::ObjectType::ObjectView as i32 {
            ViewCmd::Drop { names, missing_ok: s.missing_ok, cascade: s.behavior == pb::DropBehavior::DropCascade as i32 }
        } else {
            ViewCmd::DropTablesCascade { tables: names, missing_ok: s.missing_ok }
        };
        Ok(Statement::Ddl(Box::new(crate::constraints::DdlCmd::View(cmd))))
    }

    /// The view a FROM item names, if it names one (and no CTE of that name is visible).
    pub(crate) fn view_ref(&self, rv: &pb::RangeVar) -> Result<Option<ViewDef>> {
        if !crate::view::views_exist(self.backend) || !rv.catalogname.is_empty() {
            return Ok(None);
        }
        let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
        if schema.is_none() && (crate::pgcatalog::lookup(None, &rv.relname).is_some() || crate::sysviews::lookup(None, &rv.relname).is_some()) {
            return Ok(None);
        }
        let key = (rv.schemaname.clone(), rv.relname.clone(), crate::namespace::thread_search_path());
        if let Some((k, v)) = &*self.views.last_lookup.borrow() {
            if *k == key {
                return Ok(v.clone());
            }
        }
        let v = crate::view::lookup(self.backend, self.snap, schema, &rv.relname)?;
        *self.views.last_lookup.borrow_mut() = Some((key, v.clone()));
        Ok(v)
    }

    /// A view's query, analyzed for a reference to it: the query (its targets
    /// renamed to the view's columns) and the view's locks taken.
    pub(crate) fn expand_view(&mut self, v: &ViewDef, rv: &pb::RangeVar) -> Result<Query> {
        ferrogres_datum::stack_depth::check()?;
        if self.views.chain.contains(&v.oid) {
            return Err(recursion_error(&v.name));
        }
        crate::locking::lock_relation(self.backend, v.oid, ferrogres_engine::lmgr::lock::LockMode::AccessShare, false, &v.name)?;
        if self.views.opaque {
            return Ok(opaque_view(v));
        }
        let stmts = crate::parser::parse(&v.sql)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else {
            return Err(SqlError::internal(format!("view \"{}\" has no query", v.name)));
        };
        let _guard = PathGuard(Some(crate::namespace::thread_search_path()));
        crate::namespace::set_thread_search_path(&v.search_path);
        let mut views = self.views.clone();
        views.chain.push(v.oid);
        // The view is read by the current role; what it reads, by its owner.
        self.require(v.oid, crate::acl::SELECT);
        views.check_as = Some(crate::acl::rel_acl(self.backend, self.snap, v.oid)?.map_or(crate::roles::BOOTSTRAP_SUPERUSER, |r| r.owner));
        let mut sub = Analyzer { backend: self.backend, snap: self.snap, sql: &v.sql, params: Vec::new(), params_allowed: false, views, upper: Default::default(), planner: self.planner.clone(), fold_error: None };
        let mut q = sub.select(sel).map_err(|mut e| {
            e.position = None;
            e
        })?;
        // An error of constant folding in the view's body is the using statement's.
        if self.fold_error.is_none() {
            self.fold_error = sub.fold_error.take();
        }
        if q.targets.len() < v.columns.len() {
            return Err(SqlError::new(b"42P16", format!("view \"{}\" no longer has the columns it was created with", v.name)).at(self.sql, rv.location));
        }
        q.targets.truncate(v.columns.len());
        for (i, (t, (name, ty, _))) in q.targets.iter_mut().zip(&v.columns).enumerate() {
            t.name = name.clone();
            t.origin = Some((v.oid, i as i16 + 1));
            if t.expr.ty() == Type::Unknown && *ty == Type::Text {
                let e = std::mem::replace(&mut t.expr, crate::plan::Expr::Const(ferrogres_datum::types::Value::Null, Type::Unknown));
                t.expr = self.resolve_unknown(e);
            }
        }
        Ok(q)
    }

    /// `sel` analyzed with the views it names read as their stored columns
    /// ([`ViewContext::opaque`]).
    pub(crate) fn select_opaque(&mut self, sel: &pb::SelectStmt) -> Result<Query> {
        let was = std::mem::replace(&mut self.views.opaque, true);
        let r = self.select(sel);
        self.views.opaque = was;
        r
    }

    /// The hook of [`Analyzer::statement`]: DML whose target is a view.
    pub(crate) fn view_dml_hook(&mut self, stmt: &NodeEnum) -> Result<Option<Statement>> {
        match stmt {
            NodeEnum::InsertStmt(_) | NodeEnum::UpdateStmt(_) | NodeEnum::DeleteStmt(_) => self.view_dml_rewrite(stmt),
            NodeEnum::MergeStmt(s) => match s.relation.as_ref().map(|r| self.view_ref(r)).transpose()?.flatten() {
                Some(_) => Err(SqlError::not_supported("MERGE into a view")),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }
}

/// PostgreSQL's error for a view met again inside its own expansion.
pub(super) fn recursion_error(view: &str) -> SqlError {
    SqlError::new(b"42P17", format!("infinite recursion detected in rules for relation \"{view}\""))
}

/// A view read as its stored row type: a query of its columns (NULLs of the
/// columns' types) over no rows, standing for the view in an analysis that
/// needs only its columns.
fn opaque_view(v: &ViewDef) -> Query {
    let targets = v
        .columns
        .iter()
        .enumerate()
        .map(|(i, (name, ty, typmod))| crate::plan::Target {
            name: name.clone(),
            expr: crate::plan::Expr::Const(ferrogres_datum::types::Value::Null, *ty),
            typmod: *typmod,
            origin: Some((v.oid, i as i16 + 1)),
        })
        .collect();
    Query {
        source: crate::plan::Source::Values(Vec::new()),
        filter: None,
        aggregates: vec![],
        targets,
        hidden: vec![],
        order: vec![],
        limit: None,
        offset: None,
        grouping: None,
        distinct: None,
        paths: Default::default(),
        init_plans: Default::default(),
    }
}

/// Why PostgreSQL would not update this view automatically (its DETAIL), if so.
pub(super) fn not_updatable(a: &mut Analyzer, sel: &pb::SelectStmt) -> Option<String> {
    if sel.op != pb::SetOperation::SetopNone as i32 {
        return Some("Views containing UNION, INTERSECT, or EXCEPT are not automatically updatable.".into());
    }
    if !sel.values_lists.is_empty() || sel.from_clause.is_empty() {
        return Some("Views that do not select from a single table or view are not automatically updatable.".into());
    }
    if sel.with_clause.is_some() {
        return Some("Views containing WITH are not automatically updatable.".into());
    }
    if !sel.distinct_clause.is_empty() {
        return Some("Views containing DISTINCT are not automatically updatable.".into());
    }
    if !sel.group_clause.is_empty() {
        return Some("Views containing GROUP BY are not automatically updatable.".into());
    }
    if sel.having_clause.is_some() {
        return Some("Views containing HAVING are not automatically updatable.".into());
    }
    if sel.limit_count.is_some() || sel.limit_offset.is_some() {
        return Some("Views containing LIMIT or OFFSET are not automatically updatable.".into());
    }
    if sel.from_clause.len() != 1 || !matches!(sel.from_clause[0].node, Some(NodeEnum::RangeVar(_))) {
        return Some("Views that do not select from a single table or view are not automatically updatable.".into());
    }
    // Aggregates, window functions and set-returning functions in the select list.
    let q = a.select_opaque(sel).ok()?;
    if !q.aggregates.is_empty() || q.grouping.is_some() {
        return Some("Views that return aggregate functions are not automatically updatable.".into());
    }
    let mut has_window = false;
    for (n, _, _, _) in NodeEnum::SelectStmt(Box::new(sel.clone())).nodes() {
        if let pg_query::NodeRef::FuncCall(f) = n {
            has_window |= f.over.is_some();
        }
    }
    if has_window {
        return Some("Views that return window functions are not automatically updatable.".into());
    }
    None
}
