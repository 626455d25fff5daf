//! Analysis of CREATE VIEW and of view references ([`crate::view`]).
//!
//! A view named in FROM is expanded here into its query, analyzed again (with
//! its own text for positions, under the `search_path` stored with it, with
//! no enclosing query levels), and read as a subquery whose columns carry the
//! view's column names. INSERT into a view PostgreSQL would update
//! automatically (a simple one-table view) becomes an INSERT into its
//! relation; UPDATE / DELETE / MERGE of such a view is 0A000 for now; a view
//! PostgreSQL would not update gets its 55000 "cannot update view" with the
//! DETAIL saying why.

use super::{node, str_of, Analyzer};
use crate::catalog::Column;
use crate::errors::{Result, SqlError};
use crate::plan::{Query, Statement};
use crate::types::Type;
use crate::view::{ViewCmd, ViewDef};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// Restores the session's `search_path` when a view's expansion ends.
struct PathGuard(Option<String>);

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
        if !s.options.is_empty() {
            return Err(SqlError::not_supported("CREATE VIEW ... WITH (options)"));
        }
        if s.with_check_option != pb::ViewCheckOption::NoCheckOption as i32 && s.with_check_option != 0 {
            return Err(SqlError::not_supported("WITH CHECK OPTION"));
        }
        let Some(NodeEnum::SelectStmt(sel)) = node(&s.query) else {
            return Err(SqlError::not_supported("this view query"));
        };
        if sel.into_clause.is_some() {
            return Err(SqlError::new(b"0A000", "views must not contain SELECT INTO"));
        }
        let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
        let q = self.select(sel)?;
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
        let cmd = ViewCmd::Create {
            namespace,
            name: rv.relname.clone(),
            replace: s.replace,
            sql: text,
            search_path: crate::namespace::thread_search_path(),
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
        crate::view::lookup(self.backend, self.snap, schema, &rv.relname)
    }

    /// A view's query, analyzed for a reference to it: the query (its targets
    /// renamed to the view's columns) and the view's locks taken.
    pub(crate) fn expand_view(&mut self, v: &ViewDef, rv: &pb::RangeVar) -> Result<Query> {
        crate::locking::lock_relation(self.backend, v.oid, ferrogres_engine::lmgr::lock::LockMode::AccessShare, false, &v.name)?;
        let stmts = crate::parser::parse(&v.sql)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else {
            return Err(SqlError::internal(format!("view \"{}\" has no query", v.name)));
        };
        let _guard = PathGuard(Some(crate::namespace::thread_search_path()));
        crate::namespace::set_thread_search_path(&v.search_path);
        let mut sub = Analyzer { backend: self.backend, snap: self.snap, sql: &v.sql, params: Vec::new(), params_allowed: false };
        let mut q = sub.select(sel).map_err(|mut e| {
            e.position = None;
            e
        })?;
        if q.targets.len() < v.columns.len() {
            return Err(SqlError::new(b"42P16", format!("view \"{}\" no longer has the columns it was created with", v.name)).at(self.sql, rv.location));
        }
        q.targets.truncate(v.columns.len());
        for (i, (t, (name, ty, _))) in q.targets.iter_mut().zip(&v.columns).enumerate() {
            t.name = name.clone();
            t.origin = Some((v.oid, i as i16 + 1));
            if t.expr.ty() == Type::Unknown && *ty == Type::Text {
                let e = std::mem::replace(&mut t.expr, crate::plan::Expr::Const(crate::types::Value::Null, Type::Unknown));
                t.expr = self.resolve_unknown(e);
            }
        }
        Ok(q)
    }

    /// The hook of [`Analyzer::statement`]: DML whose target is a view.
    pub(crate) fn view_dml_hook(&mut self, stmt: &NodeEnum) -> Result<Option<Statement>> {
        match stmt {
            NodeEnum::InsertStmt(s) => match self.view_insert(s)? {
                Some(st) => Ok(Some(st)),
                None => self.view_dml(s.relation.as_ref(), "INSERT"),
            },
            NodeEnum::UpdateStmt(s) => self.view_dml(s.relation.as_ref(), "UPDATE"),
            NodeEnum::DeleteStmt(s) => self.view_dml(s.relation.as_ref(), "DELETE"),
            NodeEnum::MergeStmt(s) => match s.relation.as_ref().map(|r| self.view_ref(r)).transpose()?.flatten() {
                Some(_) => Err(SqlError::not_supported("MERGE into a view")),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// INSERT into an automatically updatable view: the same INSERT into the
    /// view's relation, the view's columns mapped to that relation's columns
    /// (the base table's defaults fill the others; the view's WHERE is not
    /// checked, as PostgreSQL without CHECK OPTION). `None`: not such a view.
    fn view_insert(&mut self, s: &pb::InsertStmt) -> Result<Option<Statement>> {
        let Some(rv) = s.relation.as_ref() else { return Ok(None) };
        let Some(v) = self.view_ref(rv)? else { return Ok(None) };
        if !crate::view::auto_updatable(&v.sql) {
            return Ok(None);
        }
        let stmts = crate::parser::parse(&v.sql)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else { return Ok(None) };
        let Some(NodeEnum::RangeVar(base)) = sel.from_clause.first().and_then(|n| n.node.as_ref()) else { return Ok(None) };
        if s.returning_clause.as_ref().is_some_and(|r| !r.exprs.is_empty()) || s.on_conflict_clause.is_some() || s.with_clause.is_some() {
            return Err(SqlError::not_supported(format!("RETURNING, ON CONFLICT or WITH in INSERT into view \"{}\"", v.name)));
        }
        // Each view column: the base column it shows, if it is a plain column.
        let mut base_cols: Vec<Option<String>> = Vec::new();
        for t in &sel.target_list {
            let Some(NodeEnum::ResTarget(rt)) = &t.node else { return Ok(None) };
            let col = match node(&rt.val) {
                Some(NodeEnum::ColumnRef(c)) => match c.fields.last().and_then(|f| f.node.as_ref()) {
                    Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                    _ => return Err(SqlError::not_supported(format!("INSERT into view \"{}\" with *", v.name))),
                },
                _ => None,
            };
            base_cols.push(col);
        }
        base_cols.truncate(v.columns.len());
        // The view columns the INSERT gives values for.
        let targets: Vec<usize> = if s.cols.is_empty() {
            let k = match node(&s.select_stmt) {
                Some(NodeEnum::SelectStmt(q)) if !q.values_lists.is_empty() => match q.values_lists[0].node.as_ref() {
                    Some(NodeEnum::List(l)) => l.items.len(),
                    _ => v.columns.len(),
                },
                _ => v.columns.len(),
            };
            (0..k.min(v.columns.len())).collect()
        } else {
            let mut out = Vec::new();
            for c in &s.cols {
                let Some(NodeEnum::ResTarget(rt)) = &c.node else { continue };
                if !rt.indirection.is_empty() {
                    return Err(SqlError::not_supported("subscripts in INSERT into a view"));
                }
                match v.columns.iter().position(|(n, _, _)| *n == rt.name) {
                    Some(i) => out.push(i),
                    None => {
                        return Err(self.err_at(
                            SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", rt.name, v.name)),
                            rt.location,
                        ))
                    }
                }
            }
            out
        };
        let mut cols = Vec::new();
        for i in targets {
            let Some(b) = &base_cols[i] else {
                return Err(SqlError::new(b"0A000", format!("cannot insert into column \"{}\" of view \"{}\"", v.columns[i].0, v.name))
                    .with_detail("View columns that are not columns of their base relation are not updatable."));
            };
            cols.push(pb::Node { node: Some(NodeEnum::ResTarget(Box::new(pb::ResTarget { name: b.clone(), location: -1, ..Default::default() }))) });
        }
        // The base relation as the view resolves it (its search_path).
        let mut base = base.clone();
        if base.schemaname.is_empty() {
            let _guard = PathGuard(Some(crate::namespace::thread_search_path()));
            crate::namespace::set_thread_search_path(&v.search_path);
            if let Ok(Some(ns)) = crate::namespace::relation_namespace(self.backend, self.snap, None, &base.relname) {
                if let Some(n) = crate::namespace::namespace_name(self.backend, self.snap, ns)? {
                    base.schemaname = n;
                }
            }
        }
        base.alias = None;
        base.location = rv.location;
        let mut ins = s.clone();
        ins.relation = Some(base);
        ins.cols = cols;
        crate::locking::lock_relation(self.backend, v.oid, ferrogres_engine::lmgr::lock::LockMode::RowExclusive, false, &v.name)?;
        // Through statement(): the relation may be a view in turn.
        self.statement(&NodeEnum::InsertStmt(Box::new(ins))).map(Some)
    }

    /// INSERT / UPDATE / DELETE naming a view: PostgreSQL's refusal for a view it
    /// would not update either, else 0A000 (automatically updatable views are
    /// not done yet). `None`: the target is not a view.
    pub(crate) fn view_dml(&mut self, rv: Option<&pb::RangeVar>, verb: &str) -> Result<Option<Statement>> {
        let Some(rv) = rv else { return Ok(None) };
        let Some(v) = self.view_ref(rv)? else { return Ok(None) };
        let stmts = crate::parser::parse(&v.sql)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else {
            return Err(SqlError::internal(format!("view \"{}\" has no query", v.name)));
        };
        let (what, ing, purpose) = match verb {
            "INSERT" => ("insert into", "inserting into", "INSERT"),
            "UPDATE" => ("update", "updating", "UPDATE"),
            _ => ("delete from", "deleting from", "DELETE"),
        };
        if let Some(detail) = not_updatable(self, sel) {
            return Err(SqlError::new(b"55000", format!("cannot {what} view \"{}\"", v.name)).with_detail(detail).with_hint(format!(
                "To enable {ing} the view, provide an INSTEAD OF {purpose} trigger or an unconditional ON {purpose} DO INSTEAD rule."
            )));
        }
        Err(SqlError::not_supported(format!("{verb} on automatically updatable view \"{}\"", v.name)))
    }
}

/// Why PostgreSQL would not update this view automatically (its DETAIL), if so.
fn not_updatable(a: &mut Analyzer, sel: &pb::SelectStmt) -> Option<String> {
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
    let q = a.select(sel).ok()?;
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
