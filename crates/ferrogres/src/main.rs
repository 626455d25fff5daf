//! The `ferrogres` server binary.
//!
//! Flags follow PostgreSQL's `postgres`: `-D DATADIR`, `-p PORT`, `-k SOCKETDIR`,
//! `-c name=value` (also `--name=value`). A missing data directory is created
//! (with a `PG_VERSION` file); the engine does not open it yet.

use ferrogres_server::{Server, ServerConfig};
use std::path::PathBuf;
use std::sync::Arc;
use std::process::ExitCode;

mod options;

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
    let version_file = datadir.join("PG_VERSION");
    if !version_file.exists() {
        std::fs::write(&version_file, "15\n")
            .map_err(|e| format!("could not write file \"{}\": {e}", version_file.display()))?;
    }
    // TODO(engine): open (or initialize) the data directory here with
    // `opts.settings` — buffers, WAL redo, catalogs — and hand the engine to the
    // SQL layer's Backend. Until both exist, the server runs the minimal built-in
    // handler, which answers connection-time queries and rejects all other SQL
    // with 0A000.
    let backend: Arc<dyn ferrogres_server::Backend> = Arc::new(ferrogres_server::minimal::MinimalBackend);
    let config = ServerConfig {
        listen_addresses: opts.listen.clone(),
        port: opts.port,
        socket_dir: Some(opts.socket_dir.clone()).filter(|d| !d.as_os_str().is_empty()),
        max_connections: opts.settings.max_connections,
    };
    ferrogres_server::install_signal_handlers().map_err(|e| format!("could not install signal handlers: {e}"))?;
    let server = Server::bind(&config, backend).map_err(|e| e.to_string())?;
    eprintln!("LOG:  database system is ready to accept connections");
    server.run().map_err(|e| e.to_string())
}
