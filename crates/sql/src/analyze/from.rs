//! FROM clauses of several items and joins, subqueries and VALUES in FROM,
//! CTE references, and column references over them and over enclosing query
//! levels.
//!
//! The FROM list is a left-deep tree of [`Join`]s (a comma is a cross join);
//! the query's input row is the concatenation of its items' rows. The
//! [`Namespace`] of a query level holds:
//!
//! - `rels`: every range-table entry a qualified name `t.col` or `t.*` can
//!   reach (tables, subqueries, functions, CTE references, aliased joins),
//!   with its columns as expressions over the level's row;
//! - `cols`: the columns an unqualified name or `*` sees, in `*`'s order (a
//!   JOIN USING / NATURAL lists each merged column once, first, as the
//!   COALESCE of both sides for FULL JOIN);
//! - `ctes`: the WITH queries defined at that level.
//!
//! A column is looked for at the innermost level first, then outward
//! (PostgreSQL's rule: the first level where the name resolves wins, even if
//! ambiguous there). A column of an enclosing level becomes
//! [`Expr::OuterColumn`]. A LATERAL subquery sees the items to its left as the
//! level just above it (bound per left row when the join runs).
//!
//! A query with one table or one function in FROM, no column aliases and no
//! WITH is analyzed as before (`Scope::table`), so it keeps its index paths.

use super::{location, node, str_of, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::join::{Join, JoinKind};
use crate::plan::*;
use ferrogres_datum::types::Type;
use ferrogres_engine::lmgr::lock::LockMode;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::rc::Rc;

#[derive(Clone, Debug)]
pub(crate) struct NsCol {
    pub name: String,
    pub expr: Expr,
    pub typmod: i32,
    pub origin: Option<(u32, i16)>,
    /// The base relation's column this name reads directly, (relation,
    /// attnum): each reference is recorded for the column privilege check
    /// ([`Analyzer::require_column`]). `None` for a subquery's, a view's, a
    /// function's or a merged USING column.
    pub perm: Option<(u32, i16)>,
    /// The entry it belongs to (for messages), empty for a merged column.
    pub rel: String,
}

/// A WITH query visible by name.
#[derive(Clone, Debug)]
pub(crate) struct Cte {
    pub name: String,
    /// Output columns (names after the CTE's column aliases).
    pub cols: Vec<(String, Type, i32)>,
    /// The query a reference reads; `None` while a recursive CTE's own step is
    /// being analyzed (then `work` is its working table).
    pub query: Option<Query>,
    pub work: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Namespace {
    pub rels: Vec<(String, Vec<NsCol>)>,
    pub cols: Vec<NsCol>,
    pub ctes: Vec<Rc<Cte>>,
    /// The system columns (`ctid`, `xmin`, ...) of the tables whose rows carry
    /// them (`NsCol::rel` names the table): found by name, qualified or not,
    /// when no column of `rels` or `cols` has it, and neither in `*` nor in
    /// `t.*`.
    pub sys: Vec<NsCol>,
}

enum Lookup {
    Found(NsCol),
    Ambiguous,
    NoColumn,
    NotFound,
}

impl Namespace {
    fn shift(&mut self, by: usize) {
        let sh = |c: &mut NsCol| crate::subquery::shift_columns(&mut c.expr, by as isize);
        self.cols.iter_mut().for_each(sh);
        self.rels.iter_mut().for_each(|(_, cols)| cols.iter_mut().for_each(sh));
        self.sys.iter_mut().for_each(sh);
    }

    fn lookup(&self, qual: Option<&str>, col: &str) -> Lookup {
        match qual {
            Some(q) => {
                let Some((_, cols)) = self.rels.iter().find(|(n, _)| n == q) else { return Lookup::NotFound };
                let mut m = cols.iter().filter(|c| c.name == col);
                match (m.next(), m.next()) {
                    (Some(c), None) => Lookup::Found(c.clone()),
                    (Some(_), Some(_)) => Lookup::Ambiguous,
                    _ => match self.sys.iter().find(|c| c.rel == q && c.name == col) {
                        Some(c) => Lookup::Found(c.clone()),
                        None => Lookup::NoColumn,
                    },
                }
            }
            None => {
                let mut m = self.cols.iter().filter(|c| c.name == col);
                match (m.next(), m.next()) {
                    (Some(c), None) => Lookup::Found(c.clone()),
                    (Some(_), Some(_)) => Lookup::Ambiguous,
                    _ => {
                        let mut m = self.sys.iter().filter(|c| c.name == col);
                        match (m.next(), m.next()) {
                            (Some(c), None) => Lookup::Found(c.clone()),
                            (Some(_), Some(_)) => Lookup::Ambiguous,
                            _ => Lookup::NotFound,
                        }
                    }
                }
            }
        }
    }

    /// A relation's columns; `perm`: they are a base relation's whose
    /// references are recorded for the column privilege check.
    fn single(t: &crate::catalog::Table, refname: &str, perm: bool) -> Namespace {
        let n = t.user_columns();
        let col = |(i, c): (usize, &crate::catalog::Column)| NsCol {
            name: c.name.clone(),
            expr: Expr::Column(i, c.ty),
            typmod: c.typmod,
            origin: (t.oid != 0).then_some((t.oid, t.attnum(i))),
            // A system column reads the whole row for the privilege check.
            perm: (perm && t.oid != 0).then_some((t.oid, if i < n { i as i16 + 1 } else { 0 })),
            rel: refname.to_string(),
        };
        let cols: Vec<NsCol> = t.columns[..n].iter().enumerate().filter(|(_, c)| !c.is_dropped()).map(col).collect();
        let sys = t.columns.iter().enumerate().skip(n).map(col).collect();
        Namespace { rels: vec![(refname.to_string(), cols.clone())], cols, ctes: vec![], sys }
    }
}

/// One analyzed FROM item.
struct Item {
    source: Source,
    width: usize,
    ns: Namespace,
    lateral: bool,
}

fn outer_expr(e: &Expr, levels: usize) -> Expr {
    let mut e = e.clone();
    crate::subquery::walk_expr(&mut e, 0, false, &mut |x, _| {
        if let Expr::Column(i, ty) = x {
            *x = Expr::OuterColumn { levels_up: levels, index: *i, ty: *ty };
        }
    });
    e
}

/// Applies column aliases `AS t(a, b)` to the first columns of an item.
/// The columns a subquery (or an expanded view) shows its enclosing FROM clause.
fn subquery_cols(q: &Query, refname: &str) -> Vec<NsCol> {
    q.targets
        .iter()
        .enumerate()
        .map(|(i, t)| NsCol { name: t.name.clone(), expr: Expr::Column(i, t.expr.ty()), typmod: t.typmod, origin: t.origin, perm: None, rel: refname.to_string() })
        .collect()
}

fn apply_aliases(a: &Analyzer, cols: &mut [NsCol], alias: Option<&pb::Alias>, refname: &str, loc: i32) -> Result<()> {
    let Some(al) = alias else { return Ok(()) };
    if al.colnames.len() > cols.len() {
        // PostgreSQL reports it without a position.
        let _ = (a, loc);
        return Err(SqlError::new(
            b"42P10",
            format!("table \"{refname}\" has {} columns available but {} columns specified", cols.len(), al.colnames.len()),
        ));
    }
    for (c, n) in cols.iter_mut().zip(&al.colnames) {
        if let Some(n) = str_of(n) {
            c.name = n.to_string();
        }
    }
    Ok(())
}

impl<'a> Analyzer<'a> {
    /// The namespace of the level `scope` analyzes (for its subqueries).
    pub(super) fn level_ns(&self, scope: &Scope) -> Rc<Namespace> {
        if let Some(ns) = &scope.ns {
            return ns.clone();
        }
        match &scope.table {
            Some((t, refname)) => Rc::new(Namespace::single(t, refname, scope.reads)),
            None => Rc::new(Namespace::default()),
        }
    }

    /// A CTE visible from `ctes` (this level's) or an enclosing level.
    fn find_cte(&self, name: &str, ctes: &[Rc<Cte>], outer: &[Rc<Namespace>]) -> Option<Rc<Cte>> {
        ctes.iter().rev().find(|c| c.name == name).cloned().or_else(|| outer.iter().rev().find_map(|ns| ns.ctes.iter().rev().find(|c| c.name == name).cloned()))
    }

    /// Whether a one-item FROM can take the single-table path.
    pub(super) fn simple_from(&self, s: &pb::SelectStmt, outer: &[Rc<Namespace>]) -> bool {
        if s.with_clause.is_some() {
            return false;
        }
        match s.from_clause.as_slice() {
            [] => true,
            [f] => match f.node.as_ref() {
                Some(NodeEnum::RangeVar(rv)) => {
                    rv.alias.as_ref().is_none_or(|a| a.colnames.is_empty())
                        && !(rv.schemaname.is_empty() && self.find_cte(&rv.relname, &[], outer).is_some())
                        && self.view_ref(rv).ok().flatten().is_none()
                }
                Some(NodeEnum::RangeFunction(rf)) => !self.names_sql_function(rf),
                _ => false,
            },
            _ => false,
        }
    }

    /// Analyzes a FROM list: its source and namespace.
    #[allow(clippy::wrong_self_convention)] // SQL's FROM clause, not a conversion
    pub(super) fn from_clause(&mut self, items: &[pb::Node], mode: LockMode, outer: &[Rc<Namespace>], ctes: &[Rc<Cte>]) -> Result<(Source, Namespace)> {
        let mut acc: Option<Item> = None;
        for it in items {
            let Some(n) = it.node.as_ref() else { continue };
            let left_ns = acc.as_ref().map(|a| a.ns.clone());
            let item = self.from_item(n, mode, outer, ctes, left_ns.as_ref())?;
            acc = Some(match acc {
                None => item,
                Some(l) => self.combine(l, item, JoinKind::Inner, None, location(n))?,
            });
        }
        let item = acc.ok_or_else(|| SqlError::internal("empty FROM"))?;
        let mut ns = item.ns;
        ns.ctes = ctes.to_vec();
        Ok((item.source, ns))
    }

    fn combine(&mut self, l: Item, mut r: Item, kind: JoinKind, cond: Option<Expr>, loc: i32) -> Result<Item> {
        for (name, _) in &r.ns.rels {
            if l.ns.rels.iter().any(|(n, _)| n == name) {
                let _ = loc;
                return Err(SqlError::new(b"42712", format!("table name \"{name}\" specified more than once")));
            }
        }
        r.ns.shift(l.width);
        let mut ns = l.ns;
        ns.rels.extend(r.ns.rels);
        ns.cols.extend(r.ns.cols);
        ns.sys.extend(r.ns.sys);
        let join = Join {
            kind,
            left: l.source,
            right: r.source,
            left_filter: None,
            right_filter: None,
            cond,
            hash: None,
            lw: l.width,
            rw: r.width,
            lateral: r.lateral,
            plan: Default::default(),
        };
        Ok(Item { source: Source::Join(Box::new(join)), width: l.width + r.width, ns, lateral: l.lateral })
    }

    #[allow(clippy::wrong_self_convention)] // a FROM item, not a conversion
    fn from_item(&mut self, n: &NodeEnum, mode: LockMode, outer: &[Rc<Namespace>], ctes: &[Rc<Cte>], left: Option<&Namespace>) -> Result<Item> {
        ferrogres_datum::stack_depth::check()?;
        match n {
            NodeEnum::RangeVar(rv) => {
                let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
                if rv.schemaname.is_empty() {
                    if let Some(cte) = self.find_cte(&rv.relname, ctes, outer) {
                        if let Some(e) = crate::cte_dml::no_returning(cte.work) {
                            return Err(self.err_at(e, rv.location));
                        }
                        let mut cols: Vec<NsCol> = cte
                            .cols
                            .iter()
                            .enumerate()
                            .map(|(i, (name, ty, typmod))| NsCol { name: name.clone(), expr: Expr::Column(i, *ty), typmod: *typmod, origin: None, perm: None, rel: refname.clone() })
                            .collect();
                        apply_aliases(self, &mut cols, rv.alias.as_ref(), &refname, rv.location)?;
                        let source = match (&cte.query, cte.work) {
                            (Some(q), _) => Source::Subquery(Box::new(q.clone())),
                            (None, Some(id)) => Source::WorkTable(id),
                            _ => return Err(SqlError::internal("CTE without query")),
                        };
                        return Ok(Item { source, width: cols.len(), ns: Namespace { rels: vec![(refname, cols.clone())], cols, ctes: vec![], sys: vec![] }, lateral: false });
                    }
                }
                if let Some(v) = self.view_ref(rv)? {
                    let q = self.expand_view(&v, rv)?;
                    let mut cols = subquery_cols(&q, &refname);
                    apply_aliases(self, &mut cols, rv.alias.as_ref(), &refname, rv.location)?;
                    let ns = Namespace { rels: vec![(refname, cols.clone())], cols, ctes: vec![], sys: vec![] };
                    return Ok(Item { source: Source::Subquery(Box::new(q)), width: ns.cols.len(), ns, lateral: false });
                }
                let t = self.scanned_table_locked(rv, mode)?;
                self.require_tracked(t.oid, crate::acl::select_privs(mode));
                let mut ns = Namespace::single(&t, &refname, true);
                apply_aliases(self, &mut ns.cols, rv.alias.as_ref(), &refname, rv.location)?;
                ns.rels[0].1 = ns.cols.clone();
                let width = t.columns.len();
                Ok(Item { source: crate::sysviews::source(t), width, ns, lateral: false })
            }
            NodeEnum::RangeFunction(rf) if self.names_sql_function(rf) => match self.sql_function_range(rf)? {
                Some(n) => self.from_item(&n, mode, outer, ctes, left),
                None => Err(SqlError::not_supported("this call of a SQL function in FROM")),
            },
            NodeEnum::RangeFunction(rf) if left.is_some() => {
                // Functions in FROM may read the items to their left (implicitly
                // LATERAL): analyzed one level down; a scan that reads them is a
                // subquery joined laterally (`crate::srf_from::lateral_query`).
                let mut level = left.cloned().unwrap_or_default();
                level.ctes = ctes.to_vec();
                let mut sub_outer = outer.to_vec();
                sub_outer.push(Rc::new(level));
                let saved = self.save_upper();
                let (t, refname, scan) = crate::srf::range_function(self, rf, &sub_outer)?;
                self.refuse_upper(outer.len(), "functions in FROM")?;
                let q = crate::srf_from::lateral_query(&t, scan);
                let ns = Namespace::single(&t, &refname, false);
                if crate::subquery::is_correlated(&q) {
                    return Ok(Item { source: Source::Subquery(Box::new(q)), width: t.columns.len(), ns, lateral: true });
                }
                // Analyzed again at this level: what the first pass queued goes.
                self.restore_upper(saved);
                let (t, refname, scan) = crate::srf::range_function(self, rf, outer)?;
                let ns = Namespace::single(&t, &refname, false);
                Ok(Item { source: Source::Function(scan), width: t.columns.len(), ns, lateral: false })
            }
            NodeEnum::RangeFunction(rf) => {
                let (t, refname, scan) = crate::srf::range_function(self, rf, outer)?;
                let ns = Namespace::single(&t, &refname, false);
                Ok(Item { source: Source::Function(scan), width: t.columns.len(), ns, lateral: false })
            }
            NodeEnum::RangeSubselect(rs) => {
                let Some(NodeEnum::SelectStmt(sub)) = node(&rs.subquery) else {
                    return Err(SqlError::not_supported("this subquery in FROM"));
                };
                let Some(alias) = rs.alias.as_ref() else {
                    // PostgreSQL points at the subquery's parenthesis.
                    let first = match node(&rs.subquery) {
                        Some(NodeEnum::SelectStmt(s)) => s.target_list.first().and_then(|t| t.node.as_ref()).map_or(-1, location),
                        _ => -1,
                    };
                    let loc = if first > 0 { self.sql[..first as usize].rfind('(').map_or(-1, |p| p as i32) } else { -1 };
                    return Err(self
                        .err_at(SqlError::new(b"42601", "subquery in FROM must have an alias"), loc)
                        .with_hint("For example, FROM (SELECT ...) [AS] foo."));
                };
                let mut level = if rs.lateral { left.cloned().unwrap_or_default() } else { Namespace::default() };
                level.ctes = ctes.to_vec();
                let mut sub_outer = outer.to_vec();
                sub_outer.push(Rc::new(level));
                let q = self.select_level(sub, &sub_outer)?;
                // A LATERAL subquery's aggregate over the items to its left
                // would be one of this very FROM's level.
                self.refuse_upper(outer.len(), "FROM clause of their own query level")?;
                let refname = alias.aliasname.clone();
                let mut cols = subquery_cols(&q, &refname);
                apply_aliases(self, &mut cols, Some(alias), &refname, -1)?;
                let lateral = rs.lateral && crate::subquery::is_correlated(&q);
                Ok(Item {
                    source: Source::Subquery(Box::new(q)),
                    width: cols.len(),
                    ns: Namespace { rels: vec![(refname, cols.clone())], cols, ctes: vec![], sys: vec![] },
                    lateral,
                })
            }
            NodeEnum::JoinExpr(j) => self.join_expr(j, mode, outer, ctes, left),
            _ => Err(SqlError::not_supported("this FROM item")),
        }
    }

    fn join_expr(&mut self, j: &pb::JoinExpr, mode: LockMode, outer: &[Rc<Namespace>], ctes: &[Rc<Cte>], left: Option<&Namespace>) -> Result<Item> {
        let (Some(ln), Some(rn)) = (node(&j.larg), node(&j.rarg)) else { return Err(SqlError::internal("JOIN without inputs")) };
        let l = self.from_item(ln, mode, outer, ctes, left)?;
        let r = self.from_item(rn, mode, outer, ctes, Some(&l.ns))?;
        let kind = match pb::JoinType::try_from(j.jointype).unwrap_or(pb::JoinType::Undefined) {
            pb::JoinType::JoinInner => JoinKind::Inner,
            pb::JoinType::JoinLeft => JoinKind::Left,
            pb::JoinType::JoinRight => JoinKind::Right,
            pb::JoinType::JoinFull => JoinKind::Full,
            other => return Err(SqlError::not_supported(format!("join type {other:?}"))),
        };
        if kind != JoinKind::Inner && kind != JoinKind::Left && r.lateral {
            return Err(SqlError::not_supported("LATERAL references under RIGHT or FULL JOIN"));
        }
        let lw = l.width;
        // USING / NATURAL: the merged columns.
        let mut using: Vec<(String, i32)> = Vec::new();
        if j.is_natural {
            for c in &l.ns.cols {
                if r.ns.cols.iter().any(|x| x.name == c.name) && !using.iter().any(|u| u.0 == c.name) {
                    using.push((c.name.clone(), -1));
                }
            }
        } else {
            for u in &j.using_clause {
                if let Some(s) = str_of(u) {
                    if using.iter().any(|x| x.0 == s) {
                        return Err(SqlError::new(b"42701", format!("column name \"{s}\" appears more than once in USING clause")));
                    }
                    using.push((s.to_string(), -1));
                }
            }
        }
        let is_using = j.is_natural || !j.using_clause.is_empty();
        let item = self.combine(l, r, kind, None, -1)?;
        let Source::Join(mut join) = item.source else { unreachable!("combine builds a join") };
        let mut ns = item.ns;
        if is_using {
            let (lcols, rcols): (Vec<NsCol>, Vec<NsCol>) = {
                let lcount = ns.cols.iter().filter(|c| crate::subquery::columns_read(&c.expr).iter().all(|i| *i < lw)).count();
                (ns.cols[..lcount].to_vec(), ns.cols[lcount..].to_vec())
            };
            let mut merged = Vec::new();
            let mut conds = Vec::new();
            let mut used_l = Vec::new();
            let mut used_r = Vec::new();
            for (name, _) in &using {
                let find = |cols: &[NsCol], side: &str| -> Result<usize> {
                    let mut m = cols.iter().enumerate().filter(|(_, c)| &c.name == name);
                    match (m.next(), m.next()) {
                        (Some((i, _)), None) => Ok(i),
                        (Some(_), Some(_)) => Err(SqlError::new(b"42702", format!("common column name \"{name}\" appears more than once in {side} table"))),
                        _ => Err(SqlError::new(b"42703", format!("column \"{name}\" specified in USING clause does not exist in {side} table"))),
                    }
                };
                let li = find(&lcols, "left")?;
                let ri = find(&rcols, "right")?;
                // Both sides' columns are read by the join condition.
                for c in [&lcols[li], &rcols[ri]] {
                    if let Some((rel, att)) = c.perm {
                        self.require_column(rel, crate::acl::SELECT, att);
                    }
                }
                used_l.push(li);
                used_r.push(ri);
                let (le, re) = (lcols[li].expr.clone(), rcols[ri].expr.clone());
                let eq = self.binary("=", le, re, -1, (-1, -1))?;
                let (cl, cr) = match &eq {
                    Expr::Compare { l, r, .. } => ((**l).clone(), (**r).clone()),
                    _ => return Err(SqlError::not_supported("this USING column type")),
                };
                conds.push(eq);
                let ty = cl.ty();
                let expr = match kind {
                    // USING/NATURAL joins are written as inner or outer joins only.
                    JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti => cl,
                    JoinKind::Right => cr,
                    JoinKind::Full => Expr::Coalesce(vec![cl, cr], ty),
                };
                let typmod = if lcols[li].typmod == rcols[ri].typmod { lcols[li].typmod } else { -1 };
                merged.push(NsCol { name: name.clone(), expr, typmod, origin: None, perm: None, rel: String::new() });
            }
            let mut cols = merged;
            cols.extend(lcols.into_iter().enumerate().filter(|(i, _)| !used_l.contains(i)).map(|x| x.1));
            cols.extend(rcols.into_iter().enumerate().filter(|(i, _)| !used_r.contains(i)).map(|x| x.1));
            ns.cols = cols;
            join.cond = match conds.len() {
                0 => None,
                1 => conds.pop(),
                _ => Some(Expr::And(conds)),
            };
        } else if let Some(q) = node(&j.quals) {
            let mut scope = Scope::new(None);
            scope.ns = Some(Rc::new(ns.clone()));
            scope.outer = outer.to_vec();
            scope.agg_place = Some("JOIN conditions");
            let c = self.bool_expr(q, &mut scope, "JOIN/ON")?;
            join.cond = Some(c);
        }
        if let Some(al) = j.alias.as_ref() {
            let mut cols = ns.cols.clone();
            apply_aliases(self, &mut cols, Some(al), &al.aliasname, -1)?;
            for c in cols.iter_mut() {
                c.rel = al.aliasname.clone();
            }
            ns.rels = vec![(al.aliasname.clone(), cols.clone())];
            ns.cols = cols;
            // The joined tables are hidden behind the alias, their system columns too.
            ns.sys.clear();
        }
        Ok(Item { source: Source::Join(join), width: item.width, ns, lateral: item.lateral })
    }

    /// A column reference over a multi-relation FROM or enclosing levels.
    pub(super) fn column_ref_levels(&mut self, c: &pb::ColumnRef, scope: &mut Scope) -> Result<Expr> {
        let names: Vec<&str> = c.fields.iter().filter_map(str_of).collect();
        if names.len() != c.fields.len() {
            return Err(self.err_at(SqlError::not_supported("this column reference"), c.location));
        }
        let names = self.strip_column_qualifiers(names, c.location)?;
        let (qual, col) = match names.as_slice() {
            [col] => (None, *col),
            [t, col] => (Some(*t), *col),
            _ => return Err(self.err_at(super::improper_qualified_name(&names), c.location)),
        };
        let cur = self.level_ns(scope);
        let levels: Vec<Rc<Namespace>> = std::iter::once(cur).chain(scope.outer.iter().rev().cloned()).collect();
        for (lvl, ns) in levels.iter().enumerate() {
            match ns.lookup(qual, col) {
                Lookup::Found(nc) => {
                    if let Some((rel, att)) = nc.perm {
                        self.require_column(rel, crate::acl::SELECT, att);
                    }
                    if lvl > 0 {
                        if let Expr::Column(i, _) = nc.expr {
                            let shown = if nc.rel.is_empty() { col.to_string() } else { format!("{}.{col}", nc.rel) };
                            self.note_outer_column(scope, lvl, i, shown, c.location);
                        }
                        return Ok(outer_expr(&nc.expr, lvl));
                    }
                    let shown = if nc.rel.is_empty() { col.to_string() } else { format!("{}.{col}", nc.rel) };
                    if scope.aggs.is_some() && !scope.in_agg && scope.bare_column.is_none() {
                        scope.bare_column = Some((c.location, shown.clone()));
                    }
                    if scope.aggs.is_some() && !scope.in_agg {
                        if let Expr::Column(i, _) = nc.expr {
                            scope.seen_columns.push((c.location, shown, i));
                        }
                    }
                    return Ok(nc.expr);
                }
                Lookup::Ambiguous => {
                    let shown = match qual {
                        Some(q) => format!("{q}.{col}"),
                        None => col.to_string(),
                    };
                    return Err(self.err_at(SqlError::new(b"42702", format!("column reference \"{shown}\" is ambiguous")), c.location));
                }
                Lookup::NoColumn => {
                    return Err(self.err_at(SqlError::new(b"42703", format!("column {}.{col} does not exist", qual.unwrap_or_default())), c.location));
                }
                Lookup::NotFound => {}
            }
        }
        Err(match qual {
            Some(q) => self.err_at(SqlError::new(b"42P01", format!("missing FROM-clause entry for table \"{q}\"")), c.location),
            None => self.err_at(SqlError::new(b"42703", format!("column \"{col}\" does not exist")), c.location),
        })
    }

    /// `*` or `t.*` over a multi-relation FROM: the targets, or `None` when
    /// `scope` has no such FROM.
    pub(super) fn star_levels(&mut self, c: &pb::ColumnRef, scope: &mut Scope) -> Result<Option<Vec<Target>>> {
        let Some(ns) = scope.ns.clone() else { return Ok(None) };
        let cols: Vec<NsCol> = match c.fields.len() {
            1 => ns.cols.clone(),
            _ => {
                let q = str_of(&c.fields[0]).unwrap_or_default();
                match ns.rels.iter().find(|(n, _)| n == q) {
                    Some((_, cols)) => cols.clone(),
                    None => {
                        return Err(self.err_at(SqlError::new(b"42P01", format!("missing FROM-clause entry for table \"{q}\"")), c.location));
                    }
                }
            }
        };
        if scope.aggs.is_some() && !scope.in_agg && scope.bare_column.is_none() {
            if let Some(c0) = cols.first() {
                let shown = if c0.rel.is_empty() { c0.name.clone() } else { format!("{}.{}", c0.rel, c0.name) };
                scope.bare_column = Some((c.location, shown));
            }
        }
        for nc in &cols {
            if let Some((rel, att)) = nc.perm {
                self.require_column(rel, crate::acl::SELECT, att);
            }
        }
        Ok(Some(cols.into_iter().map(|nc| Target { name: nc.name, expr: nc.expr, typmod: nc.typmod, origin: nc.origin }).collect()))
    }

    /// The typmod and origin of column `i` of a multi-relation FROM's row.
    pub(super) fn column_info(&self, scope: &Scope, i: usize) -> Option<(i32, Option<(u32, i16)>)> {
        let ns = scope.ns.as_ref()?;
        ns.rels.iter().flat_map(|(_, cols)| cols.iter()).find(|c| matches!(c.expr, Expr::Column(j, _) if j == i)).map(|c| (c.typmod, c.origin))
    }
}
