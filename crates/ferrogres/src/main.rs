//! The `ferrogres` server binary.
//!
//! Flags follow PostgreSQL's `postgres`: `-D DATADIR`, `-p PORT`, `-k SOCKETDIR`,
//! `-c name=value` (also `--name=value`). An empty or missing data directory is
//! initialized by the engine; an existing one is recovered if it was not shut down
//! cleanly, and gets a shutdown checkpoint on SIGTERM/SIGINT.

use ferrogres_server::{Server, ServerConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::process::ExitCode;

mod options;
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
    let opts = match options::Options::parse(&args) {
        Ok(o) => o,
        Err(msg) => {
            eprintln!("ferrogres: {msg}");
            eprintln!("Try \"ferrogres --help\" for more information.");
            return ExitCode::from(2);
        }
    };
    if opts.help {
        print!("{}", options::USAGE);
        return ExitCode::SUCCESS;
    }
    match run(opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("FATAL:  {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(opts: options::Options) -> Result<(), String> {
    let datadir: PathBuf = opts.datadir.clone();
    std::fs::create_dir_all(&datadir)
        .map_err(|e| format!("could not create directory \"{}\": {e}", datadir.display()))?;
    // The engine initializes an empty directory (initdb) or opens an existing one,
    // running crash recovery if it was not shut down cleanly.
    let (engine, report) = ferrogres_engine::engine::Engine::open(&datadir, opts.settings.clone())
        .map_err(|e| e.to_string())?;
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
    // The SQL layer (bootstrapping the catalog of a new data directory).
    let backend: Arc<dyn ferrogres_server::Backend> = Arc::new(sql_backend::SqlBackend::new(engine.clone())?);
    let config = ServerConfig {
        listen_addresses: opts.listen.clone(),
        port: opts.port,
        socket_dir: Some(opts.socket_dir.clone()).filter(|d| !d.as_os_str().is_empty()),
        max_connections: opts.settings.max_connections,
    };
    ferrogres_server::install_signal_handlers().map_err(|e| format!("could not install signal handlers: {e}"))?;
    let server = Server::bind(&config, backend).map_err(|e| e.to_string())?;
    eprintln!("LOG:  database system is ready to accept connections");
    let served = server.run().map_err(|e| e.to_string());
    eprintln!("LOG:  shutting down");
    engine.shutdown().map_err(|e| e.to_string())?;
    eprintln!("LOG:  database system is shut down");
    served
}
