//! `ALTER SYSTEM SET name = value | TO DEFAULT`, `ALTER SYSTEM RESET name | ALL`:
//! PostgreSQL's way to change the server's configuration from SQL. The setting is
//! checked as SET checks it, then written to `postgresql.auto.conf` in the data
//! directory (read after `postgresql.conf` at start and on reload), replacing the
//! file durably (temporary file, fsync, rename) under the engine's
//! `auto_conf_lock`, as PostgreSQL's AutoFileLock serializes writers. The running
//! server is not changed: `pg_reload_conf()` or a restart applies the file.
//!
//! Not transactional, as in PostgreSQL: it refuses to run inside a transaction
//! block (25001).

use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_engine::config::{conffile, guc};
use pg_query::protobuf as pb;


/// What one ALTER SYSTEM does.
#[derive(Clone, Debug, PartialEq)]
pub enum AlterSystem {
    /// Set `name` (the table's spelling) to `value` (as written), or remove it
    /// from the file (`None`: RESET, SET ... TO DEFAULT).
    One { name: String, value: Option<String> },
    /// RESET ALL: an empty file.
    ResetAll,
}

/// The statement, checked: the name must be a known setting that may be set in
/// the file, the value must be valid for it.
pub fn analyze(s: &pb::AlterSystemStmt, value_of: impl Fn(&pb::VariableSetStmt) -> Result<String>) -> Result<AlterSystem> {
    use pb::VariableSetKind as K;
    let Some(v) = s.setstmt.as_ref() else {
        return Err(SqlError::internal("ALTER SYSTEM without a setting"));
    };
    let kind = K::try_from(v.kind).unwrap_or(K::Undefined);
    if kind == K::VarResetAll {
        return Ok(AlterSystem::ResetAll);
    }
    let Some(g) = guc::find(&v.name) else {
        // Custom placeholders too: PostgreSQL 15 accepts only registered ones.
        return Err(guc::unrecognized(&v.name).into());
    };
    // Settings that are not read from a file: fixed ones, and the locations of
    // the files themselves (PostgreSQL's GUC_DISALLOW_IN_AUTO_FILE).
    if g.context == guc::Context::Internal || g.name == "data_directory" {
        return Err(SqlError::new(b"55P02", format!("parameter \"{}\" cannot be changed", g.name.to_ascii_lowercase())));
    }
    let value = match kind {
        K::VarSetValue => Some(value_of(v)?),
        K::VarSetDefault | K::VarReset => None,
        _ => return Err(SqlError::not_supported("this form of ALTER SYSTEM")),
    };
    if let Some(val) = &value {
        g.parse(&v.name, val)?;
        if matches!(g.context, guc::Context::User | guc::Context::Superuser) {
            crate::session::check_startup_setting(g.name, val)?;
        }
    }
    Ok(AlterSystem::One { name: g.name.to_string(), value })
}

/// Rewrite `postgresql.auto.conf` in `datadir` for `cmd`.
pub fn execute(engine: &ferrogres_engine::engine::Engine, datadir: &std::path::Path, cmd: &AlterSystem) -> Result<()> {
    let _guard = engine.auto_conf_lock.lock().unwrap_or_else(|p| p.into_inner());
    let path = datadir.join(conffile::AUTO_CONFIG_FILE);
    let shown = path.display().to_string();
    let text = match cmd {
        AlterSystem::ResetAll => conffile::AUTO_CONFIG_HEADER.to_string(),
        AlterSystem::One { name, value } => {
            let existing = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
                Err(e) => return Err(SqlError::new(b"58030", format!("could not open file \"{shown}\": {e}"))),
            };
            // A file someone edited by hand into a bad state is refused, as
            // PostgreSQL refuses it, rather than overwritten.
            let items = conffile::parse(&existing).map_err(|e| {
                SqlError::new(b"F0000", format!("could not parse contents of file \"{shown}\"")).with_detail(e.message(&shown))
            })?;
            conffile::auto_conf_with(&items, name, value.as_deref())
        }
    };
    conffile::write_durably(&path, &text)
        .map_err(|e| SqlError::new(b"58030", format!("could not write to file \"{shown}\": {e}")))
}

