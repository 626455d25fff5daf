//! Analysis of the statements of [`crate::index`]: CREATE INDEX, PRIMARY KEY and
//! UNIQUE constraints (in CREATE TABLE and ALTER TABLE ... ADD), DROP INDEX,
//! TRUNCATE, VACUUM and ANALYZE. A child of `analyze` so that it shares its
//! helpers; the hooks there are one match arm each.

use super::{node, str_of, Analyzer};
use crate::catalog::{self, Column, Table};
use ferrogres_datum::errors::{Result, SqlError};
use crate::index::{IndexAm, IndexCmd, IndexSpec};
use crate::plan::Statement;
use pg_query::protobuf::{self as pb, a_const::Val};
use pg_query::NodeEnum;
use ferrogres_engine::lmgr::lock::LockMode;

const OTHER_AMS: &[&str] = &["gist", "gin", "spgist", "brin"];

fn names(list: &[pb::Node]) -> Vec<String> {
    list.iter().filter_map(str_of).map(str::to_string).collect()
}

fn def_bool(d: &pb::DefElem) -> Result<bool> {
    Ok(match node(&d.arg) {
        None => true,
        Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Boolval(b)), .. })) => b.boolval,
        Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), .. })) => i.ival != 0,
        Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Sval(s)), .. })) => match s.sval.to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" | "1" => true,
            "off" | "false" | "no" | "0" => false,
            _ => return Err(SqlError::new(b"22023", format!("{} requires a Boolean value", d.defname))),
        },
        Some(NodeEnum::String(s)) => match s.sval.to_ascii_lowercase().as_str() {
            "on" | "true" | "yes" => true,
            "off" | "false" | "no" => false,
            _ => return Err(SqlError::new(b"22023", format!("{} requires a Boolean value", d.defname))),
        },
        _ => return Err(SqlError::new(b"22023", format!("{} requires a Boolean value", d.defname))),
    })
}

impl Analyzer<'_> {
    /// The table of a utility statement: PostgreSQL reports no position there.
    fn range_table_np(&self, rv: &pb::RangeVar) -> Result<Table> {
        self.range_table(rv).map_err(|mut e| {
            e.position = None;
            e
        })
    }

    /// [`Self::range_table_np`], locked in `mode` (followed again after a wait).
    fn range_table_np_locked(&self, rv: &pb::RangeVar, mode: LockMode) -> Result<Table> {
        self.range_table_locked(rv, mode).map_err(|mut e| {
            e.position = None;
            e
        })
    }

    /// A PRIMARY KEY or UNIQUE constraint over `columns` (a column constraint
    /// names its column in `colname`).
    pub(super) fn constraint_spec(&self, c: &pb::Constraint, columns: &[Column], colname: Option<&str>) -> Result<IndexSpec> {
        use pb::ConstrType as C;
        let primary = C::try_from(c.contype).unwrap_or(C::Undefined) == C::ConstrPrimary;
        if c.deferrable || c.initdeferred {
            return Err(self.err_at(SqlError::not_supported("deferrable constraints"), c.location));
        }
        if !c.indexname.is_empty() || !c.options.is_empty() || !c.indexspace.is_empty() || c.nulls_not_distinct {
            return Err(self.err_at(SqlError::not_supported("USING INDEX, NULLS NOT DISTINCT and index options of constraints"), c.location));
        }
        let keys: Vec<String> = match colname {
            Some(n) => vec![n.to_string()],
            None => names(&c.keys),
        };
        let mut cols = Vec::new();
        for k in &keys {
            let Some(i) = columns.iter().position(|col| &col.name == k) else {
                return Err(self.err_at(SqlError::new(b"42703", format!("column \"{k}\" named in key does not exist")), c.location));
            };
            if cols.contains(&i) {
                let what = if primary { "primary key" } else { "unique" };
                return Err(self.err_at(
                    SqlError::new(b"42701", format!("column \"{k}\" appears twice in {what} constraint")),
                    c.location,
                ));
            }
            cols.push(i);
        }
        let nkey = cols.len();
        for k in names(&c.including) {
            let Some(i) = columns.iter().position(|col| col.name == k) else {
                return Err(self.err_at(SqlError::new(b"42703", format!("column \"{k}\" named in key does not exist")), c.location));
            };
            cols.push(i);
        }
        Ok(IndexSpec {
            name: (!c.conname.is_empty()).then(|| c.conname.clone()),
            desc: vec![false; cols.len()],
            nulls_first: vec![false; cols.len()],
            nkey,
            columns: cols,
            unique: true,
            primary,
            constraint: true,
            if_not_exists: false,
            am: IndexAm::Btree,
            fillfactor: None,
        })
    }

    /// CREATE TABLE with constraints: `constraints` are (constraint, column name
    /// for a column constraint).
    pub(super) fn create_with_constraints(
        &self,
        namespace: u32,
        name: String,
        mut columns: Vec<Column>,
        if_not_exists: bool,
        constraints: Vec<(pb::Constraint, Option<String>)>,
    ) -> Result<Statement> {
        let mut specs: Vec<IndexSpec> = Vec::new();
        for (c, col) in &constraints {
            let spec = self.constraint_spec(c, &columns, col.as_deref())?;
            if spec.primary {
                if specs.iter().any(|s| s.primary) {
                    return Err(self.err_at(
                        SqlError::new(b"42P16", format!("multiple primary keys for table \"{name}\" are not allowed")),
                        c.location,
                    ));
                }
                for i in &spec.columns {
                    columns[*i].not_null = true;
                }
            }
            specs.push(spec);
        }
        // PostgreSQL builds the primary key's index first.
        specs.sort_by_key(|s| !s.primary);
        Ok(Statement::Index(IndexCmd::CreateTable { namespace, name, columns, if_not_exists, constraints: specs }))
    }

    pub(super) fn create_index(&mut self, s: &pb::IndexStmt) -> Result<Statement> {
        if s.concurrent {
            return Err(SqlError::not_supported("CREATE INDEX CONCURRENTLY"));
        }
        if s.where_clause.is_some() {
            return Err(SqlError::not_supported("partial indexes"));
        }
        let am = match s.access_method.to_ascii_lowercase().as_str() {
            "" | "btree" => IndexAm::Btree,
            "hash" => IndexAm::Hash,
            other if OTHER_AMS.contains(&other) => return Err(SqlError::not_supported(format!("access method \"{other}\""))),
            _ => return Err(SqlError::new(b"42704", format!("access method \"{}\" does not exist", s.access_method))),
        };
        if !s.table_space.is_empty() || s.nulls_not_distinct {
            return Err(SqlError::not_supported("index storage options, tablespaces and NULLS NOT DISTINCT"));
        }
        // PostgreSQL's order of checks (DefineIndex): what the access method
        // cannot do, then the storage parameters, then each column (operator
        // class, ordering options).
        let hash_refuses = |what: &str| SqlError::new(b"0A000", format!("access method \"hash\" does not support {what}"));
        if am == IndexAm::Hash {
            if s.unique {
                return Err(hash_refuses("unique indexes"));
            }
            if s.index_params.len() > 1 {
                return Err(hash_refuses("multicolumn indexes"));
            }
            if !s.index_including_params.is_empty() {
                return Err(hash_refuses("included columns"));
            }
        } else {
            // A B-tree's storage parameters: fillfactor (the leaf fill of the
            // bottom-up build, crate::index_build); deduplicate_items is not
            // implemented (the tree has no deduplication).
            for o in &s.options {
                if let Some(NodeEnum::DefElem(d)) = &o.node {
                    if d.defnamespace.is_empty() && d.defname == "deduplicate_items" {
                        return Err(SqlError::not_supported("storage parameter \"deduplicate_items\""));
                    }
                }
            }
        }
        let fillfactor = crate::reloptions::index_fillfactor(&s.options)?;
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("CREATE INDEX without relation"))?;
        // ShareLock: no writer is in progress while the index is built, and none
        // starts until it commits (each then sees and maintains the index).
        let table = self.range_table_np_locked(rv, LockMode::Share)?;
        let mut spec = IndexSpec {
            name: (!s.idxname.is_empty()).then(|| s.idxname.clone()),
            columns: Vec::new(),
            desc: Vec::new(),
            nulls_first: Vec::new(),
            nkey: 0,
            unique: s.unique,
            primary: false,
            constraint: false,
            if_not_exists: s.if_not_exists,
            am,
            fillfactor,
        };
        for p in &s.index_params {
            let Some(NodeEnum::IndexElem(e)) = &p.node else { continue };
            if e.expr.is_some() {
                return Err(SqlError::not_supported("index expressions"));
            }
            if !e.opclass.is_empty() || !e.collation.is_empty() {
                return Err(SqlError::not_supported("operator classes and collations in indexes"));
            }
            let Some(i) = table.columns.iter().position(|c| c.name == e.name) else {
                return Err(SqlError::new(b"42703", format!("column \"{}\" does not exist", e.name)));
            };
            if matches!(table.columns[i].ty, ferrogres_datum::types::Type::Array(_)) {
                // Index keys are formed from borrowed datums; an array has no stored image to borrow yet.
                return Err(SqlError::not_supported("indexes on array columns"));
            }
            if am == IndexAm::Hash {
                let ty = table.columns[i].ty;
                if !crate::hash_index::hashable(ty) {
                    return Err(crate::hash_index::unhashable(ty));
                }
                if e.ordering != pb::SortByDir::SortbyDefault as i32 {
                    return Err(hash_refuses("ASC/DESC options"));
                }
                if e.nulls_ordering != pb::SortByNulls::SortbyNullsDefault as i32 {
                    return Err(hash_refuses("NULLS FIRST/LAST options"));
                }
            }
            let desc = e.ordering == pb::SortByDir::SortbyDesc as i32;
            let nulls_first = match e.nulls_ordering {
                x if x == pb::SortByNulls::SortbyNullsFirst as i32 => true,
                x if x == pb::SortByNulls::SortbyNullsLast as i32 => false,
                _ => desc,
            };
            spec.columns.push(i);
            spec.desc.push(desc);
            spec.nulls_first.push(nulls_first);
        }
        spec.nkey = spec.columns.len();
        for p in &s.index_including_params {
            let Some(NodeEnum::IndexElem(e)) = &p.node else { continue };
            if e.expr.is_some() {
                return Err(SqlError::not_supported("expressions in INCLUDE"));
            }
            let Some(i) = table.columns.iter().position(|c| c.name == e.name) else {
                return Err(SqlError::new(b"42703", format!("column \"{}\" does not exist", e.name)));
            };
            spec.columns.push(i);
            spec.desc.push(false);
            spec.nulls_first.push(false);
        }
        if spec.columns.len() > 32 {
            return Err(SqlError::new(b"54011", "cannot use more than 32 columns in an index"));
        }
        Ok(Statement::Index(IndexCmd::CreateIndex { table, spec }))
    }

    pub(super) fn alter_table(&mut self, s: &pb::AlterTableStmt) -> Result<Statement> {
        if s.objtype != pb::ObjectType::ObjectTable as i32 {
            return Err(SqlError::not_supported("ALTER of this object type"));
        }
        if s.missing_ok {
            return Err(SqlError::not_supported("ALTER TABLE IF EXISTS"));
        }
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("ALTER TABLE without relation"))?;
        let table: Table = self.range_table_np_locked(rv, LockMode::AccessExclusive)?;
        let mut specs = Vec::new();
        for c in &s.cmds {
            let Some(NodeEnum::AlterTableCmd(cmd)) = &c.node else { continue };
            if cmd.subtype != pb::AlterTableType::AtAddConstraint as i32 {
                return Err(SqlError::not_supported("this form of ALTER TABLE"));
            }
            let Some(NodeEnum::Constraint(con)) = node(&cmd.def) else {
                return Err(SqlError::not_supported("this form of ALTER TABLE"));
            };
            use pb::ConstrType as C;
            match C::try_from(con.contype).unwrap_or(C::Undefined) {
                C::ConstrPrimary | C::ConstrUnique => specs.push(self.constraint_spec(con, &table.columns, None)?),
                _ => return Err(self.err_at(SqlError::not_supported("constraints other than PRIMARY KEY and UNIQUE"), con.location)),
            }
        }
        Ok(Statement::Index(IndexCmd::AddConstraints { table, specs }))
    }

    pub(super) fn drop_index(&mut self, s: &pb::DropStmt) -> Result<Statement> {
        if s.concurrent {
            return Err(SqlError::not_supported("DROP INDEX CONCURRENTLY"));
        }
        if s.behavior == pb::DropBehavior::DropCascade as i32 {
            return Err(SqlError::not_supported("DROP ... CASCADE"));
        }
        let mut out = Vec::new();
        for o in &s.objects {
            let Some(NodeEnum::List(l)) = &o.node else { continue };
            match names(&l.items).as_slice() {
                [n] => out.push((None, n.clone())),
                [s, n] => out.push((Some(s.clone()), n.clone())),
                _ => return Err(SqlError::not_supported("cross-database references")),
            }
        }
        Ok(Statement::Index(IndexCmd::DropIndexes { names: out, missing_ok: s.missing_ok }))
    }

    /// REINDEX INDEX name / REINDEX TABLE name (not CONCURRENTLY, SCHEMA,
    /// SYSTEM or DATABASE). REINDEX TABLE takes ShareLock on the table here, as
    /// PostgreSQL; REINDEX INDEX resolves and locks at execution (`index::execute`).
    pub(super) fn reindex(&mut self, s: &pb::ReindexStmt) -> Result<Statement> {
        use pb::ReindexObjectType as K;
        for p in &s.params {
            if let Some(NodeEnum::DefElem(d)) = &p.node {
                if d.defname != "verbose" {
                    return Err(SqlError::not_supported(format!("REINDEX option \"{}\"", d.defname)));
                }
            }
        }
        let rv = s.relation.as_ref();
        match (K::try_from(s.kind).unwrap_or(K::Undefined), rv) {
            (K::ReindexObjectTable, Some(rv)) => {
                let table = self.range_table_np_locked(rv, LockMode::Share)?;
                Ok(Statement::Index(IndexCmd::Reindex { table: Some(table), index: None }))
            }
            (K::ReindexObjectIndex, Some(rv)) => {
                let schema = (!rv.schemaname.is_empty()).then(|| rv.schemaname.clone());
                Ok(Statement::Index(IndexCmd::Reindex { table: None, index: Some((schema, rv.relname.clone())) }))
            }
            _ => Err(SqlError::not_supported("REINDEX SCHEMA, SYSTEM and DATABASE")),
        }
    }

    pub(super) fn truncate(&mut self, s: &pb::TruncateStmt) -> Result<Statement> {
        if s.behavior == pb::DropBehavior::DropCascade as i32 {
            return Err(SqlError::not_supported("TRUNCATE ... CASCADE"));
        }
        let mut tables = Vec::new();
        for r in &s.relations {
            let Some(NodeEnum::RangeVar(rv)) = &r.node else { continue };
            let t = self.range_table_np_locked(rv, LockMode::AccessExclusive)?;
            tables.push(t);
        }
        Ok(Statement::Index(IndexCmd::Truncate { tables }))
    }

    pub(super) fn vacuum(&mut self, s: &pb::VacuumStmt) -> Result<Statement> {
        let (mut vacuum, mut analyze, mut freeze, mut verbose, mut full) = (s.is_vacuumcmd, !s.is_vacuumcmd, false, false, false);
        for o in &s.options {
            let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
            let on = def_bool(d)?;
            match d.defname.as_str() {
                "verbose" => verbose = on,
                "analyze" => analyze = on,
                "freeze" => freeze = on,
                "full" => full = on,
                other => return Err(self.err_at(SqlError::not_supported(format!("VACUUM option \"{other}\"")), d.location)),
            }
        }
        if full {
            return Err(SqlError::not_supported("VACUUM FULL"));
        }
        if !s.is_vacuumcmd {
            vacuum = false;
            analyze = true;
        }
        let mut tables = Vec::new();
        for r in &s.rels {
            let Some(NodeEnum::VacuumRelation(vr)) = &r.node else { continue };
            let Some(rv) = &vr.relation else { continue };
            if !vr.va_cols.is_empty() && !analyze {
                return Err(SqlError::new(b"0A000", "ANALYZE option must be specified when a column list is provided"));
            }
            tables.push(self.range_table_np(rv)?);
        }
        if s.rels.is_empty() {
            // Every table of the database but the catalogs and other sessions' temporary tables.
            for (ns, nspname) in crate::namespace::namespaces(self.backend, self.snap)? {
                if ns == catalog::PG_CATALOG_NAMESPACE || crate::namespace::is_temp_name(&nspname) && nspname != crate::namespace::my_temp_name() {
                    continue;
                }
                for n in crate::index::table_names(self.backend, self.snap, ns)? {
                    if let Some(t) = catalog::lookup_table(self.backend, self.snap, Some(&nspname), &n)? {
                        tables.push(t);
                    }
                }
            }
        }
        Ok(Statement::Index(IndexCmd::Vacuum { tables, vacuum, analyze, freeze, verbose }))
    }
}
