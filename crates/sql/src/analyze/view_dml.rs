//! INSERT, UPDATE and DELETE through automatically updatable views, and WITH
//! [LOCAL | CASCADED] CHECK OPTION (PostgreSQL 15's rewriteTargetView, done on
//! the raw parse tree).
//!
//! A view that PostgreSQL would update (one relation in FROM, no DISTINCT,
//! GROUP BY, HAVING, LIMIT/OFFSET, WITH, set operation, aggregate or window
//! function) is resolved down to its base table ([`Resolved`]): each view
//! column becomes an expression over the table's columns (a plain column is
//! updatable, a computed one is not), the WHERE clauses of the views on the
//! way are collected, and so are the check options. The statement is then
//! rewritten into the same statement on the table:
//!
//! - references to the view's columns (`c`, `v.c`, `alias.c`, in ON CONFLICT
//!   also `excluded.c`) are replaced by the column's expression;
//! - SET / INSERT target columns are mapped to the table's columns (0A000
//!   "cannot update column" for a computed one);
//! - the views' WHERE clauses are ANDed before the statement's (UPDATE, DELETE);
//! - `RETURNING *` lists the view's columns;
//! - the table is named by the view's reference name (the alias, else the
//!   view's name), so qualified names keep their meaning.
//!
//! The rewritten statement is analyzed as usual, so row locking and the READ
//! COMMITTED re-check of UPDATE/DELETE work as on the table. The check options
//! become `TableExtras::view_checks` of the analyzed statement's table, which
//! `constraints::check_row` evaluates on every new row (44000).
//!
//! Not done: unqualified view column names inside subqueries of the statement
//! are not replaced (they then read the table's column of that name, which is
//! the same column unless the view renames it); whole-row references to the
//! view; functions in the view's column expressions are resolved under the
//! session's search_path (not the view's).

use super::{node, str_of, Analyzer};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::Statement;
use crate::view::ViewDef;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// One view column, seen from the base table.
#[derive(Clone, Debug)]
struct ViewCol {
    name: String,
    /// The column's expression over the base table's columns (unqualified names).
    expr: pb::Node,
    /// The base table's column, when the view column is a plain reference to it.
    base: Option<String>,
}

/// An automatically updatable view resolved down to its base table.
struct Resolved {
    view: ViewDef,
    /// The table, schema-qualified.
    base: pb::RangeVar,
    cols: Vec<ViewCol>,
    /// The WHERE clauses of the views down to the table, innermost first,
    /// over the table's columns: (view name, condition).
    quals: Vec<(String, pb::Node)>,
    /// The check options that apply, innermost first.
    checks: Vec<(String, pb::Node)>,
}

fn n(e: NodeEnum) -> pb::Node {
    pb::Node { node: Some(e) }
}

fn col_ref(fields: &[&str], location: i32) -> pb::Node {
    n(NodeEnum::ColumnRef(pb::ColumnRef {
        fields: fields.iter().map(|f| n(NodeEnum::String(pb::String { sval: f.to_string() }))).collect(),
        location,
    }))
}

/// The names of a ColumnRef (`None` for `*`).
fn ref_names(c: &pb::ColumnRef) -> Vec<Option<&str>> {
    c.fields
        .iter()
        .map(|f| match &f.node {
            Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
            _ => None,
        })
        .collect()
}

fn and(a: Option<pb::Node>, b: pb::Node) -> pb::Node {
    match a {
        None => b,
        Some(a) => n(NodeEnum::BoolExpr(Box::new(pb::BoolExpr {
            xpr: None,
            boolop: pb::BoolExprType::AndExpr as i32,
            args: vec![a, b],
            location: -1,
        }))),
    }
}

/// Calls `f` on `x` and, unless it returns false, on each expression node
/// below it (pre-order); `depth` counts the subqueries entered.
fn walk(x: &mut pb::Node, depth: u32, f: &mut dyn FnMut(&mut pb::Node, u32) -> Result<bool>) -> Result<()> {
    ferrogres_datum::stack_depth::check()?;
    if !f(x, depth)? {
        return Ok(());
    }
    let Some(e) = x.node.as_mut() else { return Ok(()) };
    let mut kids: Vec<&mut pb::Node> = Vec::new();
    let mut sub: Vec<&mut pb::Node> = Vec::new();
    fn b(o: &mut Option<Box<pb::Node>>) -> Option<&mut pb::Node> {
        o.as_deref_mut()
    }
    match e {
        NodeEnum::AExpr(a) => kids.extend(b(&mut a.lexpr).into_iter().chain(b(&mut a.rexpr))),
        NodeEnum::BoolExpr(a) => kids.extend(a.args.iter_mut()),
        NodeEnum::FuncCall(a) => {
            kids.extend(a.args.iter_mut());
            kids.extend(b(&mut a.agg_filter));
            kids.extend(a.agg_order.iter_mut());
        }
        NodeEnum::SortBy(a) => kids.extend(b(&mut a.node)),
        NodeEnum::TypeCast(a) => kids.extend(b(&mut a.arg)),
        NodeEnum::CollateClause(a) => kids.extend(b(&mut a.arg)),
        NodeEnum::NullTest(a) => kids.extend(b(&mut a.arg)),
        NodeEnum::BooleanTest(a) => kids.extend(b(&mut a.arg)),
        NodeEnum::NamedArgExpr(a) => kids.extend(b(&mut a.arg)),
        NodeEnum::CaseExpr(a) => {
            kids.extend(b(&mut a.arg));
            kids.extend(a.args.iter_mut());
            kids.extend(b(&mut a.defresult));
        }
        NodeEnum::CaseWhen(a) => kids.extend(b(&mut a.expr).into_iter().chain(b(&mut a.result))),
        NodeEnum::CoalesceExpr(a) => kids.extend(a.args.iter_mut()),
        NodeEnum::MinMaxExpr(a) => kids.extend(a.args.iter_mut()),
        NodeEnum::NullIfExpr(a) => kids.extend(a.args.iter_mut()),
        NodeEnum::AArrayExpr(a) => kids.extend(a.elements.iter_mut()),
        NodeEnum::RowExpr(a) => kids.extend(a.args.iter_mut()),
        NodeEnum::List(a) => kids.extend(a.items.iter_mut()),
        NodeEnum::ResTarget(a) => kids.extend(b(&mut a.val)),
        NodeEnum::AIndirection(a) => {
            kids.extend(b(&mut a.arg));
            kids.extend(a.indirection.iter_mut());
        }
        NodeEnum::AIndices(a) => kids.extend(b(&mut a.lidx).into_iter().chain(b(&mut a.uidx))),
        NodeEnum::SubLink(a) => {
            kids.extend(b(&mut a.testexpr));
            sub.extend(b(&mut a.subselect));
        }
        NodeEnum::SelectStmt(a) => {
            kids.extend(a.target_list.iter_mut());
            kids.extend(b(&mut a.where_clause));
            kids.extend(b(&mut a.having_clause));
            kids.extend(a.group_clause.iter_mut());
            kids.extend(a.sort_clause.iter_mut());
            for l in a.values_lists.iter_mut() {
                kids.push(l);
            }
            for f in a.from_clause.iter_mut() {
                if let Some(NodeEnum::RangeSubselect(r)) = f.node.as_mut() {
                    sub.extend(b(&mut r.subquery));
                }
            }
        }
        _ => {}
    }
    for k in kids {
        walk(k, depth, f)?;
    }
    for k in sub {
        walk(k, depth + 1, f)?;
    }
    Ok(())
}

/// Forgets the positions of a node taken from a view's text (they point
/// into that text, not into the statement's).
fn forget_locations(x: &mut pb::Node) {
    let _ = walk(x, 0, &mut |x, _| {
        match x.node.as_mut() {
            Some(NodeEnum::ColumnRef(c)) => c.location = -1,
            Some(NodeEnum::AConst(c)) => c.location = -1,
            Some(NodeEnum::FuncCall(c)) => c.location = -1,
            Some(NodeEnum::AExpr(c)) => c.location = -1,
            Some(NodeEnum::TypeCast(c)) => c.location = -1,
            Some(NodeEnum::BoolExpr(c)) => c.location = -1,
            Some(NodeEnum::SubLink(c)) => c.location = -1,
            Some(NodeEnum::CaseExpr(c)) => c.location = -1,
            Some(NodeEnum::CoalesceExpr(c)) => c.location = -1,
            Some(NodeEnum::NullTest(c)) => c.location = -1,
            Some(NodeEnum::ParamRef(c)) => c.location = -1,
            _ => {}
        }
        Ok(true)
    });
}

/// How view column references are replaced.
struct Subst<'s> {
    cols: &'s [ViewCol],
    /// Qualifiers that name the view.
    names: Vec<String>,
    /// The qualifier of the base table's columns in the result (`None`: unqualified).
    out: Option<String>,
    /// Unqualified names that are not view columns are errors (no other relation in scope).
    strict: bool,
    sql: &'s str,
}

impl Subst<'_> {
    fn col_expr(&self, c: &ViewCol) -> pb::Node {
        let mut e = c.expr.clone();
        if let Some(q) = &self.out {
            let _ = walk(&mut e, 0, &mut |x, depth| {
                if let Some(NodeEnum::ColumnRef(r)) = &x.node {
                    if depth == 0 {
                        if let [Some(name)] = ref_names(r).as_slice() {
                            *x = col_ref(&[q, name], r.location);
                        }
                    }
                    return Ok(false);
                }
                Ok(true)
            });
        }
        e
    }

    fn apply(&self, x: &mut pb::Node) -> Result<()> {
        walk(x, 0, &mut |x, depth| {
            let Some(NodeEnum::ColumnRef(r)) = &x.node else { return Ok(true) };
            let names = ref_names(r);
            let loc = r.location;
            match names.as_slice() {
                [Some(c)] if depth == 0 => match self.cols.iter().find(|vc| vc.name == *c) {
                    Some(vc) => *x = self.col_expr(vc),
                    None if self.strict => {
                        return Err(SqlError::new(b"42703", format!("column \"{c}\" does not exist")).at(self.sql, loc));
                    }
                    None => {}
                },
                [Some(q), Some(c)] if self.names.iter().any(|nm| nm == q) => match self.cols.iter().find(|vc| vc.name == *c) {
                    Some(vc) => *x = self.col_expr(vc),
                    None => return Err(SqlError::new(b"42703", format!("column {q}.{c} does not exist")).at(self.sql, loc)),
                },
                _ => {}
            }
            Ok(false)
        })
    }

    /// A RETURNING list: `*` and `view.*` become the view's columns, a bare
    /// column keeps its name.
    fn targets(&self, list: &[pb::Node], others: &[String]) -> Result<Vec<pb::Node>> {
        let mut out = Vec::new();
        for t in list {
            let Some(NodeEnum::ResTarget(rt)) = &t.node else {
                out.push(t.clone());
                continue;
            };
            if let Some(NodeEnum::ColumnRef(r)) = node(&rt.val) {
                let names = ref_names(r);
                let star = match names.as_slice() {
                    [None] => Some(true),
                    [Some(q), None] if self.names.iter().any(|nm| nm == q) => Some(false),
                    _ => None,
                };
                if let Some(all) = star {
                    for c in self.cols {
                        out.push(n(NodeEnum::ResTarget(Box::new(pb::ResTarget {
                            name: c.name.clone(),
                            val: Some(Box::new(self.col_expr(c))),
                            location: rt.location,
                            ..Default::default()
                        }))));
                    }
                    if all {
                        for o in others {
                            out.push(n(NodeEnum::ResTarget(Box::new(pb::ResTarget {
                                val: Some(Box::new(col_ref(&[o], rt.location))),
                                location: rt.location,
                                ..Default::default()
                            }))));
                        }
                        // `col_ref(&[o])` above is a placeholder: make it `o.*`.
                        for t in out.iter_mut().rev().take(others.len()) {
                            if let Some(NodeEnum::ResTarget(rt)) = t.node.as_mut() {
                                if let Some(NodeEnum::ColumnRef(c)) = rt.val.as_deref_mut().and_then(|v| v.node.as_mut()) {
                                    c.fields.push(n(NodeEnum::AStar(pb::AStar {})));
                                }
                            }
                        }
                    }
                    continue;
                }
            }
            let mut rt = rt.clone();
            if rt.name.is_empty() {
                if let Some(NodeEnum::ColumnRef(r)) = node(&rt.val) {
                    if let Some(Some(last)) = ref_names(r).last() {
                        rt.name = last.to_string();
                    }
                }
            }
            let mut t = n(NodeEnum::ResTarget(rt));
            self.apply(&mut t)?;
            out.push(t);
        }
        Ok(out)
    }
}

/// The reference names of the other relations of UPDATE ... FROM / DELETE ... USING.
fn from_names(items: &[pb::Node]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for i in items {
        match &i.node {
            Some(NodeEnum::RangeVar(r)) => out.push(r.alias.as_ref().map_or(r.relname.clone(), |a| a.aliasname.clone())),
            Some(NodeEnum::RangeSubselect(r)) if r.alias.is_some() => out.push(r.alias.as_ref().unwrap().aliasname.clone()),
            _ => return Err(SqlError::not_supported("RETURNING * through a view with this FROM item")),
        }
    }
    Ok(out)
}

/// The substitution for RETURNING: a single-table UPDATE/DELETE's RETURNING
/// sees the table by its own name only, so its columns stay unqualified there.
fn returning_sub<'s>(sub: &Subst<'s>, alone: bool) -> Subst<'s> {
    Subst { cols: sub.cols, names: sub.names.clone(), out: if alone { None } else { sub.out.clone() }, strict: sub.strict, sql: sub.sql }
}

/// Why a view has no updatable column, if so (PostgreSQL's DETAIL).
const NO_UPDATABLE_COLUMNS: &str = "Views that have no updatable columns are not automatically updatable.";

impl<'a> Analyzer<'a> {
    /// The check option of CREATE VIEW (`WITH [LOCAL | CASCADED] CHECK OPTION`
    /// or `WITH (check_option = ...)`), validated: `Some("local" | "cascaded")`.
    pub(crate) fn view_check_option(&mut self, s: &pb::ViewStmt, sel: &pb::SelectStmt) -> Result<Option<&'static str>> {
        let mut check = match pb::ViewCheckOption::try_from(s.with_check_option) {
            Ok(pb::ViewCheckOption::LocalCheckOption) => Some("local"),
            Ok(pb::ViewCheckOption::CascadedCheckOption) => Some("cascaded"),
            _ => None,
        };
        for o in &s.options {
            let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
            if d.defname != "check_option" {
                return Err(SqlError::not_supported(format!("CREATE VIEW ... WITH ({})", d.defname)));
            }
            let val = match node(&d.arg) {
                Some(NodeEnum::String(v)) => v.sval.to_ascii_lowercase(),
                Some(NodeEnum::TypeName(t)) => t.names.last().and_then(str_of).unwrap_or_default().to_ascii_lowercase(),
                _ => String::new(),
            };
            check = Some(match val.as_str() {
                "local" => "local",
                "cascaded" => "cascaded",
                _ => {
                    return Err(SqlError::new(b"22023", format!("invalid value for enum option \"check_option\": {val}"))
                        .with_detail("Valid values are \"local\" and \"cascaded\"."))
                }
            });
        }
        if check.is_some() {
            let why = match super::view::not_updatable(self, sel) {
                Some(d) => Some(d),
                None if !has_updatable_column(sel) => Some(NO_UPDATABLE_COLUMNS.to_string()),
                None => None,
            };
            if let Some(why) = why {
                return Err(SqlError::new(b"0A000", "WITH CHECK OPTION is supported only on automatically updatable views").with_hint(why));
            }
        }
        Ok(check)
    }

    /// PostgreSQL's 55000 for a view it would not update.
    fn not_updatable_error(&self, v: &ViewDef, verb: &str, detail: String) -> SqlError {
        let (what, ing, purpose) = match verb {
            "INSERT" => ("insert into", "inserting into", "INSERT"),
            "UPDATE" => ("update", "updating", "UPDATE"),
            _ => ("delete from", "deleting from", "DELETE"),
        };
        SqlError::new(b"55000", format!("cannot {what} view \"{}\"", v.name)).with_detail(detail).with_hint(format!(
            "To enable {ing} the view, provide an INSTEAD OF {purpose} trigger or an unconditional ON {purpose} DO INSTEAD rule."
        ))
    }

    /// `v` resolved down to its table, or PostgreSQL's 55000 when it is not
    /// automatically updatable. Takes RowExclusiveLock on each view on the way.
    fn resolve_view(&mut self, v: ViewDef, verb: &str) -> Result<Resolved> {
        ferrogres_datum::stack_depth::check()?;
        // The views resolved on the way down: one met again is a cycle.
        if self.views.chain.contains(&v.oid) {
            return Err(super::view::recursion_error(&v.name));
        }
        self.views.chain.push(v.oid);
        crate::locking::lock_relation(self.backend, v.oid, ferrogres_engine::lmgr::lock::LockMode::RowExclusive, false, &v.name)?;
        let stmts = crate::parser::parse(&v.sql)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else {
            return Err(SqlError::internal(format!("view \"{}\" has no query", v.name)));
        };
        if let Some(detail) = super::view::not_updatable(self, sel) {
            return Err(self.not_updatable_error(&v, verb, detail));
        }
        if verb != "DELETE" && !has_updatable_column(sel) {
            return Err(self.not_updatable_error(&v, verb, NO_UPDATABLE_COLUMNS.into()));
        }
        let Some(NodeEnum::RangeVar(base)) = sel.from_clause.first().and_then(|n| n.node.as_ref()) else {
            return Err(SqlError::internal("updatable view without a relation"));
        };
        let base_ref = base.alias.as_ref().map_or(base.relname.clone(), |a| a.aliasname.clone());
        let mut base = base.clone();
        base.alias = None;
        // The relation as the view resolves it (its search_path).
        let inner_view;
        let base_cols: Vec<String>;
        {
            let _guard = super::view::PathGuard(Some(crate::namespace::thread_search_path()));
            crate::namespace::set_thread_search_path(&v.search_path);
            if base.schemaname.is_empty() {
                if let Ok(Some(ns)) = crate::namespace::relation_namespace(self.backend, self.snap, None, &base.relname) {
                    if let Some(nm) = crate::namespace::namespace_name(self.backend, self.snap, ns)? {
                        base.schemaname = nm;
                    }
                }
            }
            inner_view = self.view_ref(&base)?;
            base_cols = match &inner_view {
                Some(iv) => iv.columns.iter().map(|c| c.0.clone()).collect(),
                None => {
                    let t = self.range_table(&base).map_err(|mut e| {
                        e.position = None;
                        e
                    })?;
                    t.columns.iter().filter(|c| !c.is_dropped()).map(|c| c.name.clone()).collect()
                }
            };
        }
        // The view's columns over its relation's columns.
        let norm = |x: &mut pb::Node| {
            forget_locations(x);
            let _ = walk(x, 0, &mut |x, depth| {
                if let Some(NodeEnum::ColumnRef(r)) = &x.node {
                    let names = ref_names(r);
                    match names.as_slice() {
                        [Some(q), Some(c)] if depth == 0 && *q == base_ref => *x = col_ref(&[c], -1),
                        [Some(_), Some(q), Some(c)] if depth == 0 && *q == base_ref => *x = col_ref(&[c], -1),
                        _ => {}
                    }
                    return Ok(false);
                }
                Ok(true)
            });
        };
        let mut cols = Vec::new();
        for t in &sel.target_list {
            let Some(NodeEnum::ResTarget(rt)) = &t.node else { continue };
            let Some(mut val) = rt.val.as_deref().cloned() else { continue };
            if let Some(NodeEnum::ColumnRef(r)) = &val.node {
                if matches!(ref_names(r).last(), Some(None)) {
                    for c in &base_cols {
                        cols.push(ViewCol { name: c.clone(), expr: col_ref(&[c], -1), base: Some(c.clone()) });
                    }
                    continue;
                }
            }
            norm(&mut val);
            let plain = match &val.node {
                Some(NodeEnum::ColumnRef(r)) => match ref_names(r).as_slice() {
                    [Some(c)] if base_cols.iter().any(|b| b == c) => Some(c.to_string()),
                    _ => None,
                },
                _ => None,
            };
            cols.push(ViewCol { name: String::new(), expr: val, base: plain });
        }
        cols.truncate(v.columns.len());
        for (c, (name, _, _)) in cols.iter_mut().zip(&v.columns) {
            c.name = name.clone();
        }
        let qual = node(&sel.where_clause).map(|w| {
            let mut w = n(w.clone());
            norm(&mut w);
            w
        });
        let (table, mut quals, mut checks, cols, qual) = match inner_view {
            None => (base, Vec::new(), Vec::new(), cols, qual),
            Some(iv) => {
                // Re-expressed over the inner view's table.
                let inner = self.resolve_view(iv, verb)?;
                let sub = Subst { cols: &inner.cols, names: vec![], out: None, strict: false, sql: "" };
                let mut composed = Vec::new();
                for mut c in cols {
                    c.base = match &c.base {
                        Some(b) => inner.cols.iter().find(|ic| ic.name == *b).and_then(|ic| ic.base.clone()),
                        None => None,
                    };
                    sub.apply(&mut c.expr)?;
                    composed.push(c);
                }
                let qual = match qual {
                    Some(mut q) => {
                        sub.apply(&mut q)?;
                        Some(q)
                    }
                    None => None,
                };
                (inner.base, inner.quals, inner.checks, composed, qual)
            }
        };
        if let Some(q) = &qual {
            quals.push((v.name.clone(), q.clone()));
        }
        match v.check_option.as_deref() {
            // Every view's condition on the way down, each named by its view.
            Some("cascaded") => checks = quals.clone(),
            Some(_) => checks.extend(qual.map(|q| (v.name.clone(), q))),
            None => {}
        }
        Ok(Resolved { view: v, base: table, cols, quals, checks })
    }
}

/// Whether the view's select list has a plain column reference (PostgreSQL
/// refuses INSERT/UPDATE and CHECK OPTION on a view without one).
fn has_updatable_column(sel: &pb::SelectStmt) -> bool {
    sel.target_list.iter().any(|t| {
        matches!(&t.node, Some(NodeEnum::ResTarget(rt)) if matches!(rt.val.as_deref().and_then(|v| v.node.as_ref()), Some(NodeEnum::ColumnRef(_))))
    })
}

impl<'a> Analyzer<'a> {
    /// UPDATE / DELETE / INSERT whose target is an automatically updatable
    /// view: the statement rewritten onto the view's table and analyzed, with
    /// the view's check options attached. `None`: the target is not a view.
    pub(crate) fn view_dml_rewrite(&mut self, stmt: &NodeEnum) -> Result<Option<Statement>> {
        let (rv, verb) = match stmt {
            NodeEnum::InsertStmt(s) => (s.relation.as_ref(), "INSERT"),
            NodeEnum::UpdateStmt(s) => (s.relation.as_ref(), "UPDATE"),
            NodeEnum::DeleteStmt(s) => (s.relation.as_ref(), "DELETE"),
            _ => return Ok(None),
        };
        let Some(rv) = rv else { return Ok(None) };
        let Some(v) = self.view_ref(rv)? else { return Ok(None) };
        // The chain of views resolved is this resolution's only: the statement's
        // own subqueries may read these views again.
        let mark = self.views.chain.len();
        // The view is written by the current role; its table, by the view's owner.
        self.require_dml(v.oid, stmt);
        let view_oid = v.oid;
        let r = self.resolve_view(v, verb);
        self.views.chain.truncate(mark);
        let r = r?;
        let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
        let mut base = r.base.clone();
        base.location = rv.location;
        base.inh = rv.inh;
        base.alias = Some(pb::Alias { aliasname: refname.clone(), colnames: vec![] });
        let quals = r.quals.iter().fold(None, |acc, (_, q)| {
            let mut q = q.clone();
            let sub = Subst { cols: &[], names: vec![], out: Some(refname.clone()), strict: false, sql: "" };
            q = sub.col_expr(&ViewCol { name: String::new(), expr: q, base: None });
            Some(and(acc, q))
        });
        let rewritten = match stmt {
            NodeEnum::UpdateStmt(s) => {
                let mut u = (**s).clone();
                let sub = Subst { cols: &r.cols, names: vec![refname.clone()], out: Some(refname.clone()), strict: s.from_clause.is_empty(), sql: self.sql };
                u.relation = Some(base);
                u.target_list = self.view_set_list(&s.target_list, &r, &sub)?;
                u.where_clause = self.view_where(s.where_clause.as_deref(), quals, &sub)?;
                if let Some(rc) = u.returning_clause.as_mut() {
                    rc.exprs = returning_sub(&sub, s.from_clause.is_empty()).targets(&rc.exprs, &from_names(&s.from_clause)?)?;
                }
                NodeEnum::UpdateStmt(Box::new(u))
            }
            NodeEnum::DeleteStmt(s) => {
                let mut d = (**s).clone();
                let sub = Subst { cols: &r.cols, names: vec![refname.clone()], out: Some(refname.clone()), strict: s.using_clause.is_empty(), sql: self.sql };
                d.relation = Some(base);
                d.where_clause = self.view_where(s.where_clause.as_deref(), quals, &sub)?;
                if let Some(rc) = d.returning_clause.as_mut() {
                    rc.exprs = returning_sub(&sub, s.using_clause.is_empty()).targets(&rc.exprs, &from_names(&s.using_clause)?)?;
                }
                NodeEnum::DeleteStmt(Box::new(d))
            }
            NodeEnum::InsertStmt(s) => NodeEnum::InsertStmt(Box::new(self.view_insert_stmt(s, &r, base, &refname)?)),
            _ => return Ok(None),
        };
        let mut st = self.statement(&rewritten)?;
        let base_oid = match &st {
            Statement::Insert { table, .. } | Statement::Update { table, .. } | Statement::Delete { table, .. } => Some(table.oid),
            Statement::InsertSelect(i) => Some(i.table.oid),
            Statement::Upsert(u) => Some(u.table.oid),
            Statement::JoinedDml(d) => Some(d.table.oid),
            _ => None,
        };
        if let Some(base) = base_oid {
            let owner = crate::acl::rel_acl(self.backend, self.snap, view_oid)?.map_or(crate::roles::BOOTSTRAP_SUPERUSER, |r| r.owner);
            crate::catcache::reassign_perms(self.backend, base, self.views.check_as, Some(owner));
        }
        if !r.checks.is_empty() {
            let table = match &mut st {
                Statement::Insert { table, .. } | Statement::Update { table, .. } => table,
                Statement::InsertSelect(i) => &mut i.table,
                Statement::Upsert(u) => &mut u.table,
                Statement::JoinedDml(d) => &mut d.table,
                _ => return Err(SqlError::not_supported(format!("WITH CHECK OPTION for this statement on view \"{}\"", r.view.name))),
            };
            let mut checks = Vec::new();
            for (view, q) in &r.checks {
                let Some(q) = &q.node else { continue };
                checks.push((view.clone(), self.check_expr(q, table)?));
            }
            table.extras.view_checks.extend(checks);
        }
        Ok(Some(st))
    }

    /// The statement's WHERE over the view's columns, after the views' conditions.
    fn view_where(&mut self, w: Option<&pb::Node>, quals: Option<pb::Node>, sub: &Subst) -> Result<Option<Box<pb::Node>>> {
        let w = match w {
            Some(w) => {
                let mut w = w.clone();
                sub.apply(&mut w)?;
                Some(w)
            }
            None => None,
        };
        Ok(match (quals, w) {
            (None, None) => None,
            (Some(q), None) => Some(Box::new(q)),
            (q, Some(w)) => Some(Box::new(and(q, w))),
        })
    }

    /// SET items of UPDATE (and of ON CONFLICT DO UPDATE) onto the table's columns.
    fn view_set_list(&mut self, list: &[pb::Node], r: &Resolved, sub: &Subst) -> Result<Vec<pb::Node>> {
        let mut out = Vec::new();
        for t in list {
            let Some(NodeEnum::ResTarget(rt)) = &t.node else { continue };
            let mut rt = (**rt).clone();
            let Some(c) = r.cols.iter().find(|c| c.name == rt.name) else {
                return Err(self.err_at(SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", rt.name, r.view.name)), rt.location));
            };
            let Some(b) = &c.base else {
                return Err(SqlError::new(b"0A000", format!("cannot update column \"{}\" of view \"{}\"", c.name, r.view.name))
                    .with_detail("View columns that are not columns of their base relation are not updatable."));
            };
            rt.name = b.clone();
            if let Some(v) = rt.val.as_deref_mut() {
                if matches!(v.node, Some(NodeEnum::SetToDefault(_))) {
                    // The view column's default: views have none here, so NULL (as PostgreSQL).
                    *v = n(NodeEnum::AConst(pb::AConst { isnull: true, val: None, location: -1 }));
                }
                sub.apply(v)?;
            }
            out.push(n(NodeEnum::ResTarget(Box::new(rt))));
        }
        Ok(out)
    }

    /// INSERT into the view rewritten onto its table.
    fn view_insert_stmt(&mut self, s: &pb::InsertStmt, r: &Resolved, mut base: pb::RangeVar, refname: &str) -> Result<pb::InsertStmt> {
        // The view columns the INSERT gives values for.
        let targets: Vec<usize> = if s.cols.is_empty() {
            let k = match node(&s.select_stmt) {
                Some(NodeEnum::SelectStmt(q)) if !q.values_lists.is_empty() => match q.values_lists[0].node.as_ref() {
                    Some(NodeEnum::List(l)) => l.items.len(),
                    _ => r.cols.len(),
                },
                Some(NodeEnum::SelectStmt(q))
                    if q.op == pb::SetOperation::SetopNone as i32
                        && !q.target_list.is_empty()
                        && !q.target_list.iter().any(|t| format!("{t:?}").contains("AStar")) =>
                {
                    q.target_list.len()
                }
                _ => r.cols.len(),
            };
            (0..k.min(r.cols.len())).collect()
        } else {
            let mut out = Vec::new();
            for c in &s.cols {
                let Some(NodeEnum::ResTarget(rt)) = &c.node else { continue };
                if !rt.indirection.is_empty() {
                    return Err(SqlError::not_supported("subscripts in INSERT into a view"));
                }
                match r.cols.iter().position(|c| c.name == rt.name) {
                    Some(i) => out.push(i),
                    None => {
                        return Err(self.err_at(
                            SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", rt.name, r.view.name)),
                            rt.location,
                        ))
                    }
                }
            }
            out
        };
        let mut cols = Vec::new();
        for i in targets {
            let Some(b) = &r.cols[i].base else {
                return Err(SqlError::new(b"0A000", format!("cannot insert into column \"{}\" of view \"{}\"", r.cols[i].name, r.view.name))
                    .with_detail("View columns that are not columns of their base relation are not updatable."));
            };
            let loc = s.cols.get(cols.len()).and_then(|c| match &c.node {
                Some(NodeEnum::ResTarget(rt)) => Some(rt.location),
                _ => None,
            });
            cols.push(n(NodeEnum::ResTarget(Box::new(pb::ResTarget { name: b.clone(), location: loc.unwrap_or(-1), ..Default::default() }))));
        }
        let mut ins = s.clone();
        ins.cols = cols;
        let names = vec![refname.to_string()];
        if let Some(oc) = ins.on_conflict_clause.as_mut() {
            // Over (the table named `refname`, `excluded`).
            let target = Subst { cols: &r.cols, names: names.clone(), out: Some(refname.to_string()), strict: false, sql: self.sql };
            let excluded = Subst { cols: &r.cols, names: vec!["excluded".into()], out: Some("excluded".into()), strict: false, sql: self.sql };
            if let Some(inf) = oc.infer.as_mut() {
                for e in inf.index_elems.iter_mut() {
                    if let Some(NodeEnum::IndexElem(ie)) = e.node.as_mut() {
                        if let Some(b) = r.cols.iter().find(|c| c.name == ie.name).and_then(|c| c.base.clone()) {
                            ie.name = b;
                        }
                    }
                }
                if let Some(w) = inf.where_clause.as_deref_mut() {
                    target.apply(w)?;
                }
            }
            let mut sets = self.view_set_list(&oc.target_list, r, &target)?;
            for t in sets.iter_mut() {
                excluded.apply(t)?;
            }
            oc.target_list = sets;
            if let Some(w) = oc.where_clause.as_deref_mut() {
                target.apply(w)?;
                excluded.apply(w)?;
            }
            if let Some(rc) = ins.returning_clause.as_mut() {
                rc.exprs = target.targets(&rc.exprs, &[])?;
            }
        } else {
            // Plain INSERT: RETURNING sees the table alone, unqualified.
            base.alias = None;
            let sub = Subst { cols: &r.cols, names, out: None, strict: true, sql: self.sql };
            if let Some(rc) = ins.returning_clause.as_mut() {
                rc.exprs = sub.targets(&rc.exprs, &[])?;
            }
        }
        ins.relation = Some(base);
        Ok(ins)
    }
}
