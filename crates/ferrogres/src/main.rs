//! The `ferrogres` server binary.
//!
//! Flags follow PostgreSQL's `postgres`: `-D DATADIR`, `-p PORT`, `-k SOCKETDIR`,
//! `-c name=value` (also `--name=value`). An empty or missing data directory is
//! initialized first (superuser `postgres`, database `postgres`).

use std::path::PathBuf;
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
    eprintln!(
        "LOG:  ferrogres data directory \"{}\" (port {}, socket directory \"{}\")",
        datadir.display(),
        opts.port,
        opts.socket_dir.display()
    );
    Err("the SQL server is not built yet (issue 4); the engine opens no data directory yet".into())
}
