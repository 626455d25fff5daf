//! SQL-language functions: CREATE [OR REPLACE] FUNCTION ... LANGUAGE sql,
//! DROP FUNCTION, and their catalog rows ([`crate::analyze::sqlfunc`]
//! analyzes the statements and expands calls).
//!
//! A function is a row of this module's pg_proc relation (relfilenode 1255,
//! created by the first CREATE FUNCTION of a database, so a database without
//! functions pays one file test per call of an unknown name):
//!
//! | column | meaning |
//! |---|---|
//! | oid oid | the function's OID |
//! | proname text, pronamespace oid | its name and schema |
//! | proargtypes text | argument type OIDs, space-separated |
//! | proargnames text | argument names, comma-separated (empty: unnamed) |
//! | proargdefaults text | each argument's DEFAULT as SQL text, U+001F-separated (empty: none) |
//! | prorettype oid, proretset bool | result type; SETOF / TABLE |
//! | provolatile text, proisstrict bool | `i`/`s`/`v`; STRICT |
//! | prosrc text | the body: a query (AS '...') or, for RETURN expr, `SELECT expr` |
//! | proout text | TABLE (...) output columns `name:typeoid`, comma-separated |
//! | proowner oid | the owner: the role that created it (NULL in rows written before owners were stored: the bootstrap superuser) |
//! | proacl text[] | its ACL as [`crate::acl`] stores ACLs; NULL: the default (owner all, PUBLIC EXECUTE) |
//!
//! A call is expanded at analysis, as PostgreSQL inlines simple SQL
//! functions: the body's parameter references (`$n` and the argument names)
//! are replaced by the call's arguments cast to the declared types, and the
//! result is analyzed in the caller's scope: a body `SELECT expr` without
//! FROM becomes `CAST((expr) AS rettype)`, any other body a scalar subquery
//! (first row) or, in FROM, a subquery. Consequences: an argument referenced
//! twice in the body is evaluated twice (a volatile argument may differ);
//! STRICT is recorded but not applied (a body over a NULL argument usually
//! gives NULL anyway); a body is one SELECT (no INSERT/UPDATE/DELETE, no
//! several statements: 0A000).

use crate::catalog;
use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{insert_row, scan_rows, RelStorage};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::storage::ForkNumber;
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;

pub const PG_PROC: u32 = 1255;

fn proc_rel() -> RelStorage {
    catalog::cat(
        PG_PROC,
        &[
            Type::Oid,
            Type::Text,
            Type::Oid,
            Type::Text,
            Type::Text,
            Type::Text,
            Type::Oid,
            Type::Bool,
            Type::Text,
            Type::Bool,
            Type::Text,
            Type::Text,
            Type::Oid,
            Type::Array(&Type::Text),
        ],
    )
}

/// Whether this database has ever had a SQL function.
pub fn functions_exist(backend: &Backend) -> bool {
    backend.engine().smgr.exists(catalog::locator(PG_PROC), ForkNumber::Main)
}

/// A stored SQL function.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcDef {
    pub oid: u32,
    pub name: String,
    pub namespace: u32,
    pub args: Vec<Type>,
    /// Argument names ("" for an unnamed one).
    pub arg_names: Vec<String>,
    /// Each argument's DEFAULT, as SQL text.
    pub defaults: Vec<Option<String>>,
    pub ret: Type,
    pub retset: bool,
    pub volatility: char,
    pub strict: bool,
    /// The body: one SELECT.
    pub src: String,
    /// TABLE (...) columns.
    pub out: Vec<(String, Type)>,
    /// pg_proc.proowner.
    pub owner: u32,
    /// pg_proc.proacl (`None`: the default).
    pub acl: Option<crate::acl::Acl>,
}

impl ProcDef {
    fn row(&self) -> Vec<Value> {
        vec![
            Value::Oid(self.oid),
            Value::Text(self.name.clone()),
            Value::Oid(self.namespace),
            Value::Text(self.args.iter().map(|t| t.oid().to_string()).collect::<Vec<_>>().join(" ")),
            Value::Text(self.arg_names.join(",")),
            Value::Text(self.defaults.iter().map(|d| d.clone().unwrap_or_default()).collect::<Vec<_>>().join("\u{1f}")),
            Value::Oid(self.ret.oid()),
            Value::Bool(self.retset),
            Value::Text(self.volatility.to_string()),
            Value::Bool(self.strict),
            Value::Text(self.src.clone()),
            Value::Text(self.out.iter().map(|(n, t)| format!("{n}:{}", t.oid())).collect::<Vec<_>>().join(",")),
            Value::Oid(self.owner),
            self.acl.as_deref().map_or(Value::Null, crate::acl::to_stored),
        ]
    }

    fn from_row(r: &[Value]) -> Option<ProcDef> {
        let txt = |v: &Value| match v {
            Value::Text(s) => s.clone(),
            _ => String::new(),
        };
        let [Value::Oid(oid), name, Value::Oid(ns), args, names, defaults, Value::Oid(ret), Value::Bool(retset), vol, Value::Bool(strict), src, out, rest @ ..] = r else {
            return None;
        };
        let owner = match rest.first() {
            Some(Value::Oid(o)) => *o,
            _ => crate::roles::BOOTSTRAP_SUPERUSER,
        };
        let acl = crate::acl::from_stored(rest.get(1));
        let args: Vec<Type> = txt(args).split_whitespace().filter_map(|o| o.parse().ok().and_then(Type::from_oid)).collect();
        let n = args.len();
        let mut arg_names: Vec<String> = txt(names).split(',').map(str::to_string).collect();
        arg_names.resize(n, String::new());
        let mut defaults: Vec<Option<String>> = txt(defaults).split('\u{1f}').map(|d| (!d.is_empty()).then(|| d.to_string())).collect();
        defaults.resize(n, None);
        let out = txt(out)
            .split(',')
            .filter(|s| !s.is_empty())
            .filter_map(|s| {
                let (n, t) = s.rsplit_once(':')?;
                Some((n.to_string(), Type::from_oid(t.parse().ok()?)?))
            })
            .collect();
        Some(ProcDef {
            oid: *oid,
            name: txt(name),
            namespace: *ns,
            args,
            arg_names,
            defaults,
            ret: Type::from_oid(*ret)?,
            retset: *retset,
            volatility: txt(vol).chars().next().unwrap_or('v'),
            strict: *strict,
            src: txt(src),
            out,
            owner,
            acl,
        })
    }

    /// `name(type, ...)`, as PostgreSQL's dependency lists print it.
    pub fn signature(&self) -> String {
        signature(&self.name, &self.args)
    }

    /// How many arguments may be left out (they have DEFAULTs).
    pub fn n_defaults(&self) -> usize {
        self.defaults.iter().rev().take_while(|d| d.is_some()).count()
    }
}

/// Every SQL function named `name` in the schemas of the search path (or in
/// `schema`), those of earlier schemas first.
pub fn lookup(backend: &Backend, snap: &Snapshot, schema: Option<&str>, name: &str) -> Result<Vec<ProcDef>> {
    if !functions_exist(backend) {
        return Ok(Vec::new());
    }
    let path = match schema {
        Some(s) => match crate::namespace::schema_oid(backend, snap, s)? {
            Some(o) => vec![o],
            None => return Err(SqlError::new(b"3F000", format!("schema \"{s}\" does not exist"))),
        },
        None => crate::namespace::search_path(backend, snap)?,
    };
    // Every function of that name, in any schema: from the catalog cache.
    let named = crate::catcache::functions(backend, snap, name, || {
        let mut v = Vec::new();
        for (_, r) in scan_rows(backend, &proc_rel(), snap)? {
            if r.get(1) != Some(&Value::Text(name.to_string())) {
                continue;
            }
            v.extend(ProcDef::from_row(&r));
        }
        Ok(v)
    })?;
    let mut out: Vec<(usize, ProcDef)> = Vec::new();
    for p in named.iter() {
        if let Some(i) = path.iter().position(|n| *n == p.namespace) {
            out.push((i, p.clone()));
        }
    }
    out.sort_by_key(|(i, p)| (*i, p.oid));
    Ok(out.into_iter().map(|x| x.1).collect())
}

/// Every SQL function (pg_proc's rows).
pub fn all(backend: &Backend, snap: &Snapshot) -> Result<Vec<ProcDef>> {
    if !functions_exist(backend) {
        return Ok(Vec::new());
    }
    let mut v: Vec<ProcDef> = scan_rows(backend, &proc_rel(), snap)?.into_iter().filter_map(|(_, r)| ProcDef::from_row(&r)).collect();
    v.sort_by_key(|p| p.oid);
    Ok(v)
}

/// `name(type, ...)` as PostgreSQL's messages print a signature.
pub fn signature(name: &str, args: &[Type]) -> String {
    format!("{name}({})", args.iter().map(|t| t.sql_name()).collect::<Vec<_>>().join(", "))
}

/// A function statement, analyzed.
/// A function DROP FUNCTION names: schema, name, argument types (None: not
/// given), and the argument list as written.
pub type DropItem = (Option<String>, String, Option<Vec<Type>>, String);

#[derive(Clone, Debug)]
pub enum FuncCmd {
    Create { def: ProcDef, replace: bool },
    /// DROP FUNCTION: name, schema, argument types (`None`: not given), display text.
    /// The last item: the argument list as written (`pg_catalog.int4` for `int`), for IF EXISTS's NOTICE.
    Drop { items: Vec<DropItem>, missing_ok: bool },
}

/// Runs a function statement in the current transaction; returns the tag.
pub fn execute(cmd: &FuncCmd, backend: &mut Backend, snap: &Snapshot, notice: &mut dyn FnMut(SqlError) -> Result<()>) -> Result<String> {
    match cmd {
        FuncCmd::Create { def, replace } => {
            let engine = backend.engine().clone();
            let loc = catalog::locator(PG_PROC);
            if !engine.smgr.exists(loc, ForkNumber::Main) {
                engine.create_relation(loc)?;
            }
            let namespace = crate::namespace::materialize(backend, def.namespace)?;
            let same = scan_rows(backend, &proc_rel(), snap)?
                .into_iter()
                .find(|(_, r)| ProcDef::from_row(r).is_some_and(|p| p.name == def.name && p.namespace == namespace && p.args == def.args));
            let mut def = def.clone();
            def.namespace = namespace;
            def.owner = backend.current_user;
            match same {
                Some(_) if !replace => {
                    return Err(SqlError::new(b"42723", format!("function \"{}\" already exists with same argument types", def.name)))
                }
                Some((tid, r)) => {
                    let old = ProcDef::from_row(&r).expect("matched above");
                    if old.ret != def.ret || old.retset != def.retset {
                        return Err(SqlError::new(b"42P13", "cannot change return type of existing function")
                            .with_hint(format!("Use DROP FUNCTION {} first.", signature(&def.name, &def.args))));
                    }
                    if old.arg_names.iter().zip(&def.arg_names).any(|(o, n)| !o.is_empty() && o != n) {
                        let (o, n) = old.arg_names.iter().zip(&def.arg_names).find(|(o, n)| !o.is_empty() && o != n).expect("found above");
                        let _ = n;
                        return Err(SqlError::new(b"42P13", format!("cannot change name of input parameter \"{o}\""))
                            .with_hint(format!("Use DROP FUNCTION {} first.", signature(&def.name, &def.args))));
                    }
                    // Replacing needs ownership; owner and ACL stay.
                    let roles = crate::acl::role_graph(backend, snap)?;
                    if !roles.has_privs_of(backend.current_user, old.owner) {
                        return Err(crate::acl::not_owner(crate::acl::ObjKind::Function, &def.name));
                    }
                    def.oid = old.oid;
                    def.owner = old.owner;
                    def.acl = old.acl.clone();
                    delete(backend, tid, &def.name)?;
                }
                None => {
                    def.oid = engine.new_oid();
                    // ALTER DEFAULT PRIVILEGES ... ON FUNCTIONS of the owner.
                    def.acl = crate::default_acl::initial_acl(backend, snap, crate::default_acl::FUNCTION, namespace, def.owner)?;
                }
            }
            insert_row(backend, &proc_rel(), &def.row())?;
            Ok("CREATE FUNCTION".into())
        }
        FuncCmd::Drop { items, missing_ok } => {
            let mut doomed = Vec::new();
            for (schema, name, args, raw) in items {
                let cands = lookup(backend, snap, schema.as_deref(), name)?;
                let hits: Vec<&ProcDef> = cands.iter().filter(|p| args.as_ref().is_none_or(|a| &p.args == a)).collect();
                match (hits.as_slice(), args) {
                    ([one], _) => doomed.push(one.oid),
                    ([_, _, ..], None) => return Err(SqlError::new(b"42725", format!("function name \"{name}\" is not unique")).with_hint("Specify the argument list to select the function unambiguously.")),
                    ([_, ..], Some(_)) => doomed.push(hits[0].oid),
                    ([], a) => {
                        let shown = match a {
                            Some(a) => signature(name, a),
                            None => name.clone(),
                        };
                        if *missing_ok {
                            notice(SqlError::notice(b"00000", format!("function {name}({raw}) does not exist, skipping")))?;
                        } else if a.is_none() {
                            return Err(SqlError::new(b"42883", format!("could not find a function named \"{name}\"")));
                        } else {
                            return Err(SqlError::new(b"42883", format!("function {shown} does not exist")));
                        }
                    }
                }
            }
            // Dropping needs ownership (or a superuser's rights).
            let roles = crate::acl::role_graph(backend, snap)?;
            for p in all(backend, snap)?.iter().filter(|p| doomed.contains(&p.oid)) {
                if !roles.has_privs_of(backend.current_user, p.owner) {
                    return Err(crate::acl::not_owner(crate::acl::ObjKind::Function, &p.name));
                }
            }
            drop_oids(backend, snap, &doomed)?;
            Ok("DROP FUNCTION".into())
        }
    }
}

/// The one function `item` names (GRANT, ALTER FUNCTION: PostgreSQL's
/// LookupFuncWithArgs): without an argument list the name must be unique
/// (42725), else the argument types must match (42883). `procedure`: ON
/// PROCEDURE, which no SQL function answers (there are no procedures).
pub fn resolve(backend: &Backend, snap: &Snapshot, item: &DropItem, procedure: bool) -> Result<ProcDef> {
    let (schema, name, args, _) = item;
    let word = if procedure { "procedure" } else { "function" };
    let cands = lookup(backend, snap, schema.as_deref(), name)?;
    let hits: Vec<ProcDef> = cands.into_iter().filter(|p| args.as_ref().is_none_or(|a| &p.args == a)).collect();
    let one = match (hits.len(), args) {
        (0, None) => return Err(SqlError::new(b"42883", format!("could not find a {word} named \"{name}\""))),
        (0, Some(a)) => return Err(SqlError::new(b"42883", format!("{word} {} does not exist", signature(name, a)))),
        (1, _) | (_, Some(_)) => hits.into_iter().next().expect("one found"),
        (_, None) => {
            return Err(SqlError::new(b"42725", format!("{word} name \"{name}\" is not unique")).with_hint(format!("Specify the argument list to select the {word} unambiguously.")))
        }
    };
    if procedure {
        return Err(SqlError::new(b"42809", format!("{} is not a procedure", one.signature())));
    }
    Ok(one)
}

/// Deletes the pg_proc rows of the functions `doomed`.
pub fn drop_oids(backend: &mut Backend, snap: &Snapshot, doomed: &[u32]) -> Result<()> {
    if doomed.is_empty() {
        return Ok(());
    }
    for (tid, r) in scan_rows(backend, &proc_rel(), snap)? {
        if let Some(Value::Oid(o)) = r.first() {
            if doomed.contains(o) {
                delete(backend, tid, "function")?;
            }
        }
    }
    Ok(())
}

/// The SQL function with OID `oid`, from the catalog cache.
pub fn by_oid(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<ProcDef>> {
    if !functions_exist(backend) {
        return Ok(None);
    }
    let every = crate::catcache::all_functions(backend, snap, || all(backend, snap))?;
    Ok(every.iter().find(|p| p.oid == oid).cloned())
}

/// Replaces function `oid`'s row by `f`'s change of it (owner, ACL).
pub fn update(backend: &mut Backend, snap: &Snapshot, oid: u32, f: &dyn Fn(&mut ProcDef)) -> Result<()> {
    let found = scan_rows(backend, &proc_rel(), snap)?.into_iter().find_map(|(tid, r)| ProcDef::from_row(&r).filter(|p| p.oid == oid).map(|p| (tid, p)));
    let Some((tid, mut def)) = found else {
        return Err(SqlError::internal(format!("no pg_proc row for function {oid}")));
    };
    delete(backend, tid, &def.name)?;
    f(&mut def);
    insert_row(backend, &proc_rel(), &def.row())?;
    Ok(())
}

fn delete(backend: &mut Backend, tid: ferrogres_engine::heap::tuple::Tid, name: &str) -> Result<()> {
    match crate::catcache::heap_delete(backend, proc_rel().rel, tid, None)? {
        TmResult::Ok | TmResult::SelfModified => Ok(()),
        _ => Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")
            .with_detail(format!("function \"{name}\" was changed by a concurrent transaction"))),
    }
}

/// The body with each parameter reference (`$n`, or an argument's name not
/// qualified and not called) replaced by `args[n]` (SQL text).
pub fn substitute(src: &str, names: &[String], args: &[String]) -> Result<String> {
    let scan = pg_query::scan(src).map_err(|e| SqlError::new(b"42601", format!("{e}")))?;
    let mut out = String::new();
    let mut last = 0usize;
    let toks = &scan.tokens;
    for (i, t) in toks.iter().enumerate() {
        let (s, e) = (t.start as usize, t.end as usize);
        let text = &src[s..e];
        let prev = (i > 0).then(|| &src[toks[i - 1].start as usize..toks[i - 1].end as usize]);
        let prev_dot = prev == Some(".") || prev.is_some_and(|p| p.eq_ignore_ascii_case("as"));
        let next = toks.get(i + 1).map(|n| &src[n.start as usize..n.end as usize]);
        let replacement = if let Some(num) = text.strip_prefix('$') {
            num.parse::<usize>().ok().and_then(|n| args.get(n.wrapping_sub(1)))
        } else if !prev_dot && next != Some(".") && next != Some("(") {
            let ident = if text.starts_with('"') { text.trim_matches('"').to_string() } else { text.to_ascii_lowercase() };
            names.iter().position(|n| !n.is_empty() && *n == ident).and_then(|k| args.get(k))
        } else {
            None
        };
        if let Some(r) = replacement {
            out.push_str(&src[last..s]);
            out.push('(');
            out.push_str(r);
            out.push(')');
            last = e;
        }
    }
    out.push_str(&src[last..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_substituted_by_position_and_name() {
        let names = vec!["x".to_string(), "y".to_string()];
        let args = vec!["1".to_string(), "t.b".to_string()];
        assert_eq!(substitute("SELECT $1 + y", &names, &args).unwrap(), "SELECT (1) + (t.b)");
        assert_eq!(substitute("SELECT x FROM t WHERE t.x = X", &names, &args).unwrap(), "SELECT (1) FROM t WHERE t.x = (1)");
        assert_eq!(substitute("SELECT x(1), 'x'", &names, &args).unwrap(), "SELECT x(1), 'x'");
    }
}
