//! The `ferrogres` server binary.
//!
//! Flags follow PostgreSQL's `postgres`: `-D DATADIR`, `-p PORT`, `-k SOCKETDIR`,
//! `-c name=value` (also `--name=value`), each checked at start against the table of
//! known settings. An empty or missing data directory is initialized by the engine;
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

mod options;
mod privileges;
mod sql_backend;

/// mimalloc instead of glibc's malloc: per-thread free lists without atomic
/// operations on the common path. A pgbench -S transaction makes a few dozen
/// small allocations; under glibc malloc and free were a fifth of the server's
/// instructions (callgrind, see issue 4's note). Wrapped in the engine's
/// per-thread byte count (`memacct`: one thread-local add per call), which the
/// SQL layer's per-statement memory limit reads.
#[global_allocator]
static GLOBAL: ferrogres_engine::memacct::CountingAlloc<mimalloc::MiMalloc> =
    ferrogres_engine::memacct::CountingAlloc(mimalloc::MiMalloc);

fn main() -> ExitCode {
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
    match run(opts) {
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
fn run(opts: options::Options) -> Result<(), Fatal> {
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
    let socket_dir = std::path::absolute(&opts.socket_dir).unwrap_or_else(|_| opts.socket_dir.clone());
    let socket_dir = (!opts.socket_dir.as_os_str().is_empty()).then_some(socket_dir);

    // The data directory lock, before anything in the directory is read.
    let start_time = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let first_listen = opts.listen.split(',').map(str::trim).find(|a| !a.is_empty()).unwrap_or("");
    let lines = vec![
        std::process::id().to_string(),
        datadir.display().to_string(),
        start_time.to_string(),
        opts.port.to_string(),
        socket_dir.as_ref().map(|d| d.display().to_string()).unwrap_or_default(),
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

    let config = ServerConfig {
        listen_addresses: opts.listen.clone(),
        port: opts.port,
        socket_dir,
        max_connections: opts.settings.max_connections,
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

    // The engine initializes an empty directory (initdb) or opens an existing one,
    // running crash recovery if it was not shut down cleanly.
    let (engine, report) = ferrogres_engine::engine::Engine::open(".", opts.settings.clone())?;
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
    let backend: Arc<dyn ferrogres_server::Backend> =
        Arc::new(sql_backend::SqlBackend::new(engine.clone(), overrides).map_err(fatal)?);
    ferrogres_server::install_signal_handlers().map_err(|e| fatal(format!("could not install signal handlers: {e}")))?;
    let server = listeners.into_server(backend);
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
