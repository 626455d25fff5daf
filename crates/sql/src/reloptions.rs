//! Table storage parameters: `CREATE TABLE ... WITH (name = value, ...)`; and a
//! hash index's (`fillfactor`, stored and honoured: [`index_fillfactor`]).
//!
//! `fillfactor` (10..100) is validated with PostgreSQL's messages and accepted,
//! but **not honoured**: the engine's heap insert (`heapam::heap_insert`) has no
//! fillfactor and fills every page; the value is not stored in the catalog
//! either (pg_class has no reloptions column yet). `oids = false` is accepted as
//! PostgreSQL does. Other parameters PostgreSQL knows are 0A000; unknown ones and
//! unknown namespaces get PostgreSQL's 22023 errors.

use ferrogres_datum::errors::{Result, SqlError};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// The parameters PostgreSQL 15 accepts for tables, other than fillfactor.
const KNOWN: &[&str] = &[
    "autovacuum_enabled",
    "autovacuum_vacuum_threshold",
    "autovacuum_vacuum_insert_threshold",
    "autovacuum_analyze_threshold",
    "autovacuum_vacuum_cost_delay",
    "autovacuum_vacuum_cost_limit",
    "autovacuum_freeze_min_age",
    "autovacuum_freeze_max_age",
    "autovacuum_freeze_table_age",
    "autovacuum_multixact_freeze_min_age",
    "autovacuum_multixact_freeze_max_age",
    "autovacuum_multixact_freeze_table_age",
    "log_autovacuum_min_duration",
    "autovacuum_vacuum_scale_factor",
    "autovacuum_vacuum_insert_scale_factor",
    "autovacuum_analyze_scale_factor",
    "toast_tuple_target",
    "parallel_workers",
    "user_catalog_table",
    "vacuum_index_cleanup",
    "vacuum_truncate",
];

fn arg_text(d: &pb::DefElem) -> String {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        None => "true".into(),
        Some(NodeEnum::Integer(i)) => i.ival.to_string(),
        Some(NodeEnum::Float(f)) => f.fval.clone(),
        Some(NodeEnum::String(s)) => s.sval.clone(),
        Some(NodeEnum::Boolean(b)) => b.boolval.to_string(),
        Some(NodeEnum::TypeName(t)) => t
            .names
            .iter()
            .filter_map(|n| match n.node.as_ref() {
                Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("."),
        Some(_) => String::new(),
    }
}

/// The value of `fillfactor`: an integer option whose decimal values are
/// rounded, as PostgreSQL's parse_int; 10..100.
fn parse_fillfactor(value: &str) -> Result<u32> {
    let v: f64 = value
        .trim()
        .parse()
        .map_err(|_| SqlError::new(b"22023", format!("invalid value for integer option \"fillfactor\": {value}")))?;
    let n = v.round();
    if !(10.0..=100.0).contains(&n) {
        return Err(SqlError::new(b"22023", format!("value {value} out of bounds for option \"fillfactor\""))
            .with_detail("Valid values are between \"10\" and \"100\"."));
    }
    Ok(n as u32)
}

/// Validates an index's WITH (...) list (`fillfactor`, 10..100: hash and B-tree
/// indexes); returns the fillfactor if given.
pub fn index_fillfactor(options: &[pb::Node]) -> Result<Option<u16>> {
    let mut fillfactor = None;
    for o in options {
        let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
        if !d.defnamespace.is_empty() {
            return Err(SqlError::new(b"22023", format!("unrecognized parameter namespace \"{}\"", d.defnamespace)));
        }
        match d.defname.as_str() {
            "fillfactor" if fillfactor.is_some() => {
                return Err(SqlError::new(b"22023", "parameter \"fillfactor\" specified more than once"))
            }
            "fillfactor" => fillfactor = Some(parse_fillfactor(&arg_text(d))? as u16),
            name => return Err(SqlError::new(b"22023", format!("unrecognized parameter \"{name}\""))),
        }
    }
    Ok(fillfactor)
}

/// Validates a table's WITH (...) list; returns the fillfactor (default 100).
pub fn table_options(options: &[pb::Node]) -> Result<u32> {
    let mut fillfactor = None;
    let mut seen: Vec<String> = Vec::new();
    for o in options {
        let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
        match d.defnamespace.as_str() {
            "" => {}
            "toast" => {
                return Err(if KNOWN.contains(&d.defname.as_str()) && d.defname.starts_with("autovacuum") {
                    SqlError::not_supported(format!("storage parameter \"toast.{}\"", d.defname))
                } else {
                    SqlError::new(b"22023", format!("unrecognized parameter \"{}\"", d.defname))
                })
            }
            ns => return Err(SqlError::new(b"22023", format!("unrecognized parameter namespace \"{ns}\""))),
        }
        if seen.contains(&d.defname) {
            return Err(SqlError::new(b"22023", format!("parameter \"{}\" specified more than once", d.defname)));
        }
        seen.push(d.defname.clone());
        let value = arg_text(d);
        match d.defname.as_str() {
            "fillfactor" => fillfactor = Some(parse_fillfactor(&value)?),
            "oids" => {
                if !matches!(value.to_ascii_lowercase().as_str(), "false" | "off" | "0" | "no") {
                    return Err(SqlError::new(b"0A000", "tables declared WITH OIDS are not supported"));
                }
            }
            name if KNOWN.contains(&name) => return Err(SqlError::not_supported(format!("storage parameter \"{name}\""))),
            name => return Err(SqlError::new(b"22023", format!("unrecognized parameter \"{name}\""))),
        }
    }
    Ok(fillfactor.unwrap_or(100))
}
