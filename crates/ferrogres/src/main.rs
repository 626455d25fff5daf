//! The `ferrogres` server binary.
//!
//! Flags follow PostgreSQL's `postgres`: `-D DATADIR`, `-p PORT`, `-k SOCKETDIR`,
//! `-c name=value` (also `--name=value`), each checked at start against the table of
//! known settings; then the data directory's `postgresql.conf` and
//! `postgresql.auto.conf` (written at initialization when missing, with
//! `pg_hba.conf`), under the command line. SIGHUP re-reads them. An empty or missing data directory is initialized by the engine;
//! an existing one is recovered if it was not shut down cleanly, and gets a shutdown
//! checkpoint on SIGTERM/SIGINT. `postmaster.pid` keeps a second server off the
//! data directory, `.s.PGSQL.PORT.lock` off the socket; started as root, the server
//! runs as an unprivileged account (`privileges.rs`).

use ferrogres_server::lockfile::{self, LockFile, LockKind};
use ferrogres_server::{Listeners, ServerConfig};
use options::Fatal;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

mod alloc;
mod options;
mod privileges;
mod sql_backend;

/// mimalloc (called directly, `alloc.rs`) instead of glibc's malloc: per-thread free lists without atomic
/// operations on the common path. A pgbench -S transaction makes a few dozen
/// small allocations; under glibc malloc and free were a fifth of the server's
/// instructions (callgrind, see issue 4's note). Wrapped in the engine's
/// per-thread byte count (`memacct`: one thread-local add per call), which the
/// SQL layer's per-statement memory limit reads.
#[global_allocator]
static GLOBAL: ferrogres_engine::memacct::CountingAlloc<alloc::MiMalloc> =
    ferrogres_engine::memacct::CountingAlloc(alloc::MiMalloc);

fn main() -> ExitCode {
    ferrogres_engine::memacct::set_release(alloc::release_free_memory);
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Every setting is checked first: a bad one ends the start before the data
    // directory is touched (exit status 1, as PostgreSQL's).
    let opts = match options::Options::parse(&args) {
        Ok(o) => o,
        Err(f) => {
            f.print();
            return ExitCode::FAILURE;
        }
    };
    if opts.help {
        print!("{}", options::USAGE);
        return ExitCode::SUCCESS;
    }
    match run(opts, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            f.print();
            ExitCode::FAILURE
        }
    }
}

fn fatal(message: impl Into<String>) -> Fatal {
    Fatal::new(message)
}

/// Start-up order (PostgreSQL's postmaster, the same steps): data directory, the
/// account to run as (root only), chdir into the data directory, `postmaster.pid`,
/// sockets and their lock files, dropping root, then the engine (recovery), then
/// serving. Shutdown: stop serving, shutdown checkpoint, remove the lock files.
fn run(mut opts: options::Options, args: Vec<String>) -> Result<(), Fatal> {
    let datadir: PathBuf = std::path::absolute(&opts.datadir)
        .map_err(|e| fatal(format!("could not access directory \"{}\": {e}", opts.datadir.display())))?;
    if !datadir.exists() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&datadir)
            .map_err(|e| fatal(format!("could not create directory \"{}\": {e}", datadir.display())))?;
    }
    let account = if privileges::running_as_root() { Some(privileges::choose_account(&datadir)?) } else { None };
    if let Some(a) = &account {
        privileges::chown_tree(&datadir, a)?;
    }
    // From here on every data-directory path is relative to it, as in PostgreSQL.
    std::env::set_current_dir(&datadir)
        .map_err(|e| fatal(format!("could not change directory to \"{}\": {e}", datadir.display())))?;
    let datadir = std::fs::canonicalize(".").unwrap_or(datadir);
    // postgresql.conf and postgresql.auto.conf, under the command line.
    opts.load_config_files(&datadir)?;
    let socket_dirs: Vec<PathBuf> =
        opts.socket_dirs.iter().map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone())).collect();

    // The data directory lock, before anything in the directory is read.
    let start_time = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let first_listen = opts.listen.split(',').map(str::trim).find(|a| !a.is_empty()).unwrap_or("");
    let lines = vec![
        std::process::id().to_string(),
        datadir.display().to_string(),
        start_time.to_string(),
        opts.port.to_string(),
        socket_dirs.first().map(|d| d.display().to_string()).unwrap_or_default(),
        first_listen.to_string(),
        format!("{:9} {:9}", 0, 0), // no System V shared memory
        lockfile::STATUS_STARTING.to_string(),
    ];
    let mut pid_file = LockFile::acquire(
        std::path::Path::new("postmaster.pid"),
        "postmaster.pid",
        LockKind::DataDir,
        &datadir.display().to_string(),
        lines,
    )
    .map_err(|e| Fatal { message: e.message, detail: None, hint: e.hint, usage: false })?;

    // pg_hba.conf: written at initialization (below) when missing, so a data
    // directory without one gets PostgreSQL's initdb default.
    let hba_path = datadir.join(ferrogres_engine::config::conffile::HBA_FILE);
    let hba = if hba_path.exists() { load_hba(&hba_path).ok_or_else(|| fatal("could not load pg_hba.conf"))? } else { Default::default() };
    // ssl = on: the certificate and key now, or no start (PostgreSQL's FATAL).
    let tls = if opts.ssl {
        Some(ferrogres_server::tls::load(&opts.ssl_cert_file, &opts.ssl_key_file).map_err(|(message, detail)| Fatal {
            message,
            detail,
            hint: None,
            usage: false,
        })?)
    } else {
        None
    };
    let config = ServerConfig {
        tls,
        hba: Arc::new(hba),
        listen_addresses: opts.listen.clone(),
        port: opts.port,
        socket_dirs,
        socket_permissions: opts.socket_permissions,
        max_connections: opts.settings.max_connections,
        max_wal_senders: opts.settings.max_wal_senders,
        superuser_reserved_connections: opts.superuser_reserved_connections,
        authentication_timeout: opts.authentication_timeout,
        data_directory: datadir.display().to_string(),
    };
    let listeners = Listeners::bind(&config).map_err(|e| {
        // "message\nHINT:  hint" from the listener.
        let text = e.to_string();
        match text.split_once("\nHINT:  ") {
            Some((m, h)) => Fatal { message: m.into(), detail: None, hint: Some(h.into()), usage: false },
            None => fatal(text),
        }
    })?;
    if let Some(a) = &account {
        for f in listeners.socket_files().iter().chain([pid_file.path().to_path_buf()].iter()) {
            privileges::lchown(f, a).map_err(|e| fatal(format!("could not change owner of \"{}\": {e}", f.display())))?;
        }
        privileges::drop_to(a)?;
        eprintln!(
            "LOG:  started as root: running as user \"{}\" (uid {}, gid {}), {}",
            a.name, a.uid, a.gid, a.why
        );
    }

    // A new (or older) data directory gets the default configuration files
    // that are missing: postgresql.conf, postgresql.auto.conf, pg_hba.conf
    // (written by the account the server runs as).
    ferrogres_engine::config::conffile::write_defaults(&datadir)
        .map_err(|e| fatal(format!("could not write the default configuration files in \"{}\": {e}", datadir.display())))?;

    // The engine initializes an empty directory (initdb) or opens an existing one,
    // running crash recovery if it was not shut down cleanly.
    let mut settings = opts.settings.clone();
    if !settings.recovery_target_time.is_empty() {
        // The engine has no timestamp parser: the binary converts the target.
        let t = &settings.recovery_target_time;
        let us = ferrogres_datum::datetime::timestamptz_in(t)
            .map_err(|_| fatal(format!("invalid value for parameter \"recovery_target_time\": \"{t}\"")))?;
        settings.recovery_target_time_us = Some(us);
    }
    let (engine, report) = ferrogres_engine::engine::Engine::open(".", settings)?;
    if report.initialized {
        eprintln!("LOG:  initialized database cluster in \"{}\"", datadir.display());
    }
    if report.recovered {
        eprintln!("LOG:  database system was not properly shut down; automatic recovery in progress");
        eprintln!("LOG:  redo starts at {}", report.redo_start);
        eprintln!(
            "LOG:  redo done at {} ({} records; {})",
            report.redo_end, report.redo_records, report.end_reason
        );
    }
    // The SQL layer (bootstrapping the catalog of a new data directory); sessions
    // start with the settings given at start as their defaults.
    let mut overrides = opts.overrides.clone();
    overrides.push(("data_directory".into(), datadir.display().to_string()));
    let sql = Arc::new(sql_backend::SqlBackend::new(engine.clone(), overrides).map_err(fatal)?);
    let backend: Arc<dyn ferrogres_server::Backend> = sql.clone();
    ferrogres_server::install_signal_handlers().map_err(|e| fatal(format!("could not install signal handlers: {e}")))?;
    let mut server = listeners.into_server(backend);
    {
        // SIGHUP (or pg_reload_conf()): the configuration files again.
        let datadir = datadir.clone();
        let mut current = opts;
        let engine = engine.clone();
        server.on_reload(Box::new(move |runtime| {
            match load_hba(&datadir.join(ferrogres_engine::config::conffile::HBA_FILE)) {
                Some(h) => runtime.set_hba(h),
                None => eprintln!("LOG:  pg_hba.conf was not reloaded"),
            }
            if let Some(new) = reload(&args, &datadir, &current) {
                runtime.set_authentication_timeout(new.authentication_timeout);
                engine.archiver.reload(&new.settings.archive_command, new.settings.archive_timeout_s);
                let mut overrides = new.overrides.clone();
                overrides.push(("data_directory".into(), datadir.display().to_string()));
                sql.set_overrides(overrides);
                current = new;
            }
        }));
    }
    let _ = pid_file.set_line(8, lockfile::STATUS_READY);
    eprintln!("LOG:  database system is ready to accept connections");
    let served = server.run().map_err(|e| fatal(e.to_string()));
    let _ = pid_file.set_line(8, lockfile::STATUS_STOPPING);
    eprintln!("LOG:  shutting down");
    engine.shutdown()?;
    eprintln!("LOG:  database system is shut down");
    drop(pid_file); // removes postmaster.pid: a clean shutdown
    served
}

/// The sighup settings a reload applies while the server runs (the other
/// engine settings of context sighup are read at start only, for now).
/// restore_command is only read when archive recovery starts.
const RELOADED: &[&str] = &["authentication_timeout", "archive_command", "archive_timeout", "restore_command"];

/// The configuration after a reload: the command line and the files read again.
/// `None` (the old configuration stays) when a file has an error, as PostgreSQL
/// applies nothing from a file with errors. A changed setting that only a
/// restart applies keeps its old value, with PostgreSQL's LOG line; session
/// defaults (settings of context user and superuser) apply to new sessions.
fn reload(args: &[String], datadir: &std::path::Path, old: &options::Options) -> Option<options::Options> {
    let mut new = options::Options::parse(args).ok()?;
    if let Err(f) = new.load_config_files(datadir) {
        eprintln!("LOG:  {}; no changes were applied", f.message);
        return None;
    }
    let old_value = |n: &str| old.overrides.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut kept = Vec::new();
    for (name, value) in &new.overrides {
        if old_value(name).as_deref() == Some(value.as_str()) {
            continue;
        }
        let Some(g) = ferrogres_engine::config::guc::find(name) else { continue };
        match g.context {
            ferrogres_engine::config::guc::Context::Postmaster | ferrogres_engine::config::guc::Context::Internal => {
                eprintln!("LOG:  parameter \"{name}\" cannot be changed without restarting the server");
                kept.push(name.clone());
            }
            ferrogres_engine::config::guc::Context::Sighup if !RELOADED.contains(&name.as_str()) => {
                // The engine reads these at start only (for now).
                eprintln!("LOG:  parameter \"{name}\" changed to \"{value}\", effective at the next restart (ferrogres does not reload it yet)");
                kept.push(name.clone());
            }
            _ => eprintln!("LOG:  parameter \"{name}\" changed to \"{value}\""),
        }
    }
    // A restart-only setting taken out of the files keeps its running value too.
    for (name, _) in &old.overrides {
        let restart_only = ferrogres_engine::config::guc::find(name).is_some_and(|g| {
            matches!(g.context, ferrogres_engine::config::guc::Context::Postmaster)
                || (g.context == ferrogres_engine::config::guc::Context::Sighup && !RELOADED.contains(&name.as_str()))
        });
        if restart_only && !new.overrides.iter().any(|(k, _)| k == name) {
            kept.push(name.clone());
        }
    }
    // What a restart would apply keeps its running value (SHOW tells the truth).
    for name in kept {
        new.overrides.retain(|(k, _)| *k != name);
        if let Some(v) = old_value(&name) {
            new.overrides.push((name, v));
        }
    }
    Some(new)
}

/// pg_hba.conf's rules, or `None` after logging each error as PostgreSQL does.
fn load_hba(path: &std::path::Path) -> Option<ferrogres_server::hba::Hba> {
    match ferrogres_server::hba::load(path) {
        Ok(h) => Some(h),
        Err(errors) => {
            for e in errors {
                eprintln!("LOG:  {e}");
            }
            None
        }
    }
}
