//! The client suite's Rust programs (crates/ferrogres/tests/clients.rs):
//! `scenarios tokio-postgres|sqlx HOST PORT USER DBNAME SOCKETDIR`.
//!
//! Both drivers prepare every statement and read results in the binary format;
//! each prints a transcript of what it decoded (values, errors as SQLSTATE,
//! message and fields, row counts), ending with `done`, which the test
//! compares with the same program's run against PostgreSQL 15.

mod sqlx_scenario;
mod tokio_pg;

/// Where to connect, from the command line.
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub db: String,
    pub sockdir: String,
}

/// Prints one transcript line.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { println!($($arg)*) };
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 7 {
        eprintln!("usage: {} tokio-postgres|sqlx HOST PORT USER DBNAME SOCKETDIR", args[0]);
        std::process::exit(2);
    }
    let t = Target {
        host: args[2].clone(),
        port: args[3].parse().expect("a port number"),
        user: args[4].clone(),
        db: args[5].clone(),
        sockdir: args[6].clone(),
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let r = match args[1].as_str() {
        "tokio-postgres" => rt.block_on(tokio_pg::run(&t)),
        "sqlx" => rt.block_on(sqlx_scenario::run(&t)),
        other => Err(format!("unknown client {other}").into()),
    };
    if let Err(e) = r {
        eprintln!("unexpected error: {e}");
        std::process::exit(1);
    }
    out!("done");
}
