//! CREATE TABLE's SERIAL columns, expression defaults and CHECK constraints
//! (analysis; executed by [`crate::constraints`]).

use super::{node, Analyzer};
use crate::catalog::{self, Column, Table};
use crate::constraints::{columns_of, deparse_expr, CheckSpec, CreateExtras};
use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::RelStorage;
use ferrogres_datum::types::Type;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// The integer type of a `serial`-family type name, if it is one.
pub(super) fn serial_type(tn: Option<&pb::TypeName>) -> Option<Type> {
    let tn = tn?;
    if !tn.array_bounds.is_empty() || !tn.typmods.is_empty() {
        return None;
    }
    let names: Vec<&str> = tn
        .names
        .iter()
        .filter_map(|n| match &n.node {
            Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
            _ => None,
        })
        .collect();
    match names.as_slice() {
        ["serial" | "serial4"] => Some(Type::Int4),
        ["bigserial" | "serial8"] => Some(Type::Int8),
        ["smallserial" | "serial2"] => Some(Type::Int2),
        _ => None,
    }
}

fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// A SERIAL column: NOT NULL, `DEFAULT nextval('<table>_<col>_seq'::regclass)`
/// and a sequence owned by the column, as PostgreSQL makes them.
pub(super) fn serial_column(
    a: &Analyzer,
    namespace: u32,
    table: &str,
    index: usize,
    col: &mut Column,
    constraints: &[pb::Node],
    extras: &mut CreateExtras,
) -> Result<()> {
    for c in constraints {
        if let Some(NodeEnum::Constraint(c)) = &c.node {
            if c.contype == pb::ConstrType::ConstrDefault as i32 {
                return Err(SqlError::new(b"42601", format!("multiple default values specified for column \"{}\" of table \"{table}\"", col.name)));
            }
        }
    }
    col.not_null = true;
    let base = format!("{table}_{}_seq", col.name);
    let mut name = base.clone();
    let mut i = 0;
    while crate::index::find_relation(a.backend, a.snap, namespace, &name)?.is_some()
        || extras.sequences.iter().any(|s| s.1 == name)
    {
        i += 1;
        name = format!("{base}{i}");
    }
    // Qualified outside public, so that the default resolves whatever the search path.
    let qual = match namespace {
        catalog::PUBLIC_NAMESPACE => String::new(),
        crate::namespace::TEMP_PENDING => "pg_temp.".to_string(),
        ns => match crate::namespace::namespace_name(a.backend, a.snap, ns)? {
            Some(n) if crate::namespace::is_temp_name(&n) => "pg_temp.".to_string(),
            Some(n) => format!("{}.", quote_ident(&n)),
            None => String::new(),
        },
    };
    extras.defaults.push((index, format!("nextval('{qual}{}'::regclass)", quote_ident(&name).replace('\'', "''"))));
    extras.sequences.push((index, name, crate::sequence::serial_options(col.ty)));
    Ok(())
}

/// The CHECK constraints of a new table: analyzed over its columns now (so
/// errors come at CREATE TABLE), stored as SQL text.
pub(super) fn checks(
    a: &mut Analyzer,
    namespace: u32,
    table: &str,
    columns: &[Column],
    checks: Vec<(pb::Constraint, Option<usize>)>,
    extras: &mut CreateExtras,
) -> Result<()> {
    if checks.is_empty() {
        return Ok(());
    }
    let tmp = Table {
        oid: 0,
        name: table.to_string(),
        namespace,
        storage: RelStorage { rel: catalog::locator(0), toast: None, types: columns.iter().map(|c| c.ty).collect(), missing: Vec::new(), proj: None, system: None },
        columns: columns.to_vec(),
        indexes: Vec::new(),
        extras: Default::default(),
    };
    for (c, _) in checks {
        if c.is_no_inherit {
            return Err(SqlError::not_supported("NO INHERIT"));
        }
        let Some(raw) = node(&c.raw_expr) else { continue };
        let e = a.check_expr(raw, &tmp)?;
        let mut cols = Vec::new();
        columns_of(&e, &mut cols);
        let name = (!c.conname.is_empty()).then(|| c.conname.clone());
        if let Some(n) = &name {
            if extras.checks.iter().any(|x| x.name.as_ref() == Some(n)) {
                return Err(SqlError::new(b"42710", format!("check constraint \"{n}\" already exists")));
            }
        }
        extras.checks.push(CheckSpec { name, sql: deparse_expr(raw)?, columns: cols });
    }
    Ok(())
}
