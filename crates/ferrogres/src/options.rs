//! Command-line options, PostgreSQL style, checked before anything else happens.
//!
//! Every setting (`-c name=value`, `--name=value`, and the flags that stand for one:
//! `-p` port, `-h` listen_addresses, `-k` unix_socket_directories) is checked
//! against the table of known settings (`ferrogres_engine::config::guc`): its name,
//! type, unit and range. A bad one is a [`Fatal`] with PostgreSQL's text, and the
//! server exits with status 1 before it touches the data directory.
//!
//! Then the data directory's `postgresql.conf` and `postgresql.auto.conf` are
//! read ([`Options::load_config_files`]): their settings apply unless the
//! command line gave the same one (PostgreSQL's source priority: command line
//! over files, the auto file over postgresql.conf). Errors in the files are LOG
//! lines followed by FATAL `configuration file "F" contains errors`.

use ferrogres_engine::config::{conffile, guc, Settings};
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

pub const USAGE: &str = "\
ferrogres is a PostgreSQL-compatible database server.

Usage:
  ferrogres [OPTION]...

Options:
  -D DATADIR         database directory (default: ./data, or $PGDATA)
  -p PORT            port number to listen on (default: 5433)
  -h HOSTNAME        host name or IP address to listen on (default: localhost)
  -k DIRECTORY       Unix-domain socket location (default: /tmp)
  -c NAME=VALUE      set run-time parameter
  --NAME=VALUE       set run-time parameter
  --help             show this help, then exit

Started as root, ferrogres runs as the owner of the data directory (or as
\"nobody\" when root owns it), after taking its sockets and lock files.
";

/// A start-up error: PostgreSQL's FATAL message, with its DETAIL and HINT.
#[derive(Debug)]
pub struct Fatal {
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// A usage error (bad flag): printed as `ferrogres: message` with the --help hint.
    pub usage: bool,
}

impl Fatal {
    pub fn new(message: impl Into<String>) -> Fatal {
        Fatal { message: message.into(), detail: None, hint: None, usage: false }
    }

    fn usage(message: impl Into<String>) -> Fatal {
        Fatal { usage: true, ..Fatal::new(message) }
    }

    /// The lines as PostgreSQL writes them to its log.
    pub fn print(&self) {
        if self.usage {
            eprintln!("ferrogres: {}", self.message);
            eprintln!("Try \"ferrogres --help\" for more information.");
            return;
        }
        eprintln!("FATAL:  {}", self.message);
        if let Some(d) = &self.detail {
            eprintln!("DETAIL:  {d}");
        }
        if let Some(h) = &self.hint {
            eprintln!("HINT:  {h}");
        }
    }
}

impl From<ferrogres_engine::error::Error> for Fatal {
    fn from(e: ferrogres_engine::error::Error) -> Fatal {
        match e {
            ferrogres_engine::error::Error::User { message, detail, hint, .. } => {
                Fatal { message, detail, hint, usage: false }
            }
            other => Fatal::new(other.to_string()),
        }
    }
}

#[derive(Debug)]
pub struct Options {
    pub datadir: PathBuf,
    pub port: u16,
    pub listen: String,
    /// unix_socket_directories, in order; empty: no Unix socket.
    pub socket_dirs: Vec<PathBuf>,
    pub socket_permissions: u32,
    pub authentication_timeout: Duration,
    /// Connection slots only superusers may take (of max_connections).
    pub superuser_reserved_connections: usize,
    /// ssl, ssl_cert_file, ssl_key_file (files relative to the data directory).
    pub ssl: bool,
    pub ssl_cert_file: PathBuf,
    pub ssl_key_file: PathBuf,
    pub settings: Settings,
    /// Every setting given, as (table name, value in SHOW's canonical form): the
    /// defaults of the SQL sessions (SHOW shared_buffers, work_mem...).
    pub overrides: Vec<(String, String)>,
    pub help: bool,
    /// The settings the command line gave (table spelling, or lower case for a
    /// custom one): a configuration file does not change them.
    pub from_command_line: Vec<String>,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, Fatal> {
        let mut o = Options {
            datadir: std::env::var_os("PGDATA").map(PathBuf::from).unwrap_or_else(|| "data".into()),
            port: 5433,
            listen: "localhost".into(),
            socket_dirs: vec![PathBuf::from("/tmp")],
            socket_permissions: 0o777,
            authentication_timeout: Duration::from_secs(60),
            superuser_reserved_connections: 3,
            ssl: false,
            ssl_cert_file: PathBuf::from("server.crt"),
            ssl_key_file: PathBuf::from("server.key"),
            settings: Settings::default(),
            overrides: Vec::new(),
            help: false,
            from_command_line: Vec::new(),
        };
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            let mut value = |flag: &str| -> Result<String, Fatal> {
                // "-Dvalue" or "-D value"
                if a.len() > 2 {
                    Ok(a[2..].to_string())
                } else {
                    i += 1;
                    args.get(i).cloned().ok_or_else(|| Fatal::usage(format!("option requires an argument -- '{}'", &flag[1..])))
                }
            };
            match a {
                "--help" | "-?" => o.help = true,
                _ if a.starts_with("-D") => o.datadir = PathBuf::from(value("-D")?),
                _ if a.starts_with("-p") => {
                    let v = value("-p")?;
                    o.set("port", &v)?
                }
                _ if a.starts_with("-h") => {
                    let v = value("-h")?;
                    o.set("listen_addresses", &v)?
                }
                _ if a.starts_with("-k") => {
                    let v = value("-k")?;
                    o.set("unix_socket_directories", &v)?
                }
                _ if a.starts_with("-c") => {
                    let v = value("-c")?;
                    o.set_pair(&v, "-c ")?
                }
                _ if a.starts_with("--") && a.len() > 2 => o.set_pair(&a[2..], "--")?,
                _ if a.starts_with('-') && a.len() > 1 => {
                    return Err(Fatal::usage(format!("invalid option -- '{}'", &a[1..2])))
                }
                _ => return Err(Fatal::usage(format!("invalid argument: \"{a}\""))),
            }
            i += 1;
        }
        o.from_command_line = o.overrides.iter().map(|(n, _)| n.clone()).collect();
        Ok(o)
    }

    /// Read `postgresql.conf`, then `postgresql.auto.conf`, from `datadir` (a
    /// missing file has no settings) and apply their settings, except those the
    /// command line gave. Every error is printed as PostgreSQL logs it; if there
    /// was any, the result is FATAL `configuration file "F" contains errors`
    /// naming the first file with an error.
    pub fn load_config_files(&mut self, datadir: &Path) -> Result<(), Fatal> {
        let mut failed: Option<String> = None;
        for name in [conffile::CONFIG_FILE, conffile::AUTO_CONFIG_FILE] {
            let path = datadir.join(name);
            let shown = path.display().to_string();
            let text = match std::fs::read_to_string(&path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Fatal::new(format!("could not open configuration file \"{shown}\": {e}"))),
            };
            let mut errors = Vec::new();
            match conffile::parse(&text) {
                Ok(items) => {
                    for it in items {
                        if let Err(f) = self.set_from_file(&it, &shown) {
                            errors.push(f.message);
                        }
                    }
                }
                Err(e) => errors.push(e.message(&shown)),
            }
            for e in &errors {
                eprintln!("LOG:  {e}");
            }
            if !errors.is_empty() && failed.is_none() {
                failed = Some(shown);
            }
        }
        match failed {
            Some(f) => Err(Fatal::new(format!("configuration file \"{f}\" contains errors"))),
            None => Ok(()),
        }
    }

    /// One setting of a configuration file, unless the command line set it.
    fn set_from_file(&mut self, it: &conffile::Item, file: &str) -> Result<(), Fatal> {
        let key = guc::find(&it.name).map_or_else(|| it.name.to_ascii_lowercase(), |g| g.name.to_string());
        if self.from_command_line.contains(&key) {
            return Ok(());
        }
        if guc::find(&it.name).is_none() && !guc::is_custom(&it.name) {
            return Err(Fatal::new(format!(
                "unrecognized configuration parameter \"{}\" in file \"{file}\" line {}",
                it.name, it.line
            )));
        }
        self.set(&it.name, &it.value)
    }

    /// `name=value` of `-c` or `--`; PostgreSQL turns dashes in the name into
    /// underscores.
    fn set_pair(&mut self, pair: &str, flag: &str) -> Result<(), Fatal> {
        let Some((name, value)) = pair.split_once('=') else {
            return Err(Fatal::new(format!("{flag}{pair} requires a value")));
        };
        self.set(&name.replace('-', "_"), value)
    }

    /// Checks one setting and applies it where it belongs (the engine's
    /// [`Settings`], the listener's options), remembering it for the sessions.
    fn set(&mut self, name: &str, value: &str) -> Result<(), Fatal> {
        let Some(g) = guc::find(name) else {
            if guc::is_custom(name) {
                self.overrides.push((name.to_ascii_lowercase(), value.to_string()));
                return Ok(());
            }
            return Err(guc::unrecognized(name).into());
        };
        if g.context == guc::Context::Internal {
            return Err(guc::change_forbidden(g, true).map(Fatal::from).unwrap_or_else(|| Fatal::new("")));
        }
        let v = g.parse(name, value)?;
        // A setting sessions may change is checked as SET checks it (DateStyle's
        // keywords, TimeZone's names...); its SHOW form is the sessions' default.
        let shown = if matches!(g.context, guc::Context::User | guc::Context::Superuser) {
            ferrogres_sql::session::check_startup_setting(g.name, value).map_err(|e| Fatal {
                message: e.message,
                detail: e.detail,
                hint: e.hint,
                usage: false,
            })?
        } else {
            g.show(&v)
        };
        match g.name {
            "port" => self.port = v.as_int() as u16, // 1 .. 65535 by the table
            "listen_addresses" => self.listen = value.to_string(),
            "unix_socket_directories" => {
                // A comma-separated list, each directory gets a socket; PostgreSQL
                // allows double quotes around a directory.
                self.socket_dirs = value
                    .split(',')
                    .map(|d| d.trim().trim_matches('"'))
                    .filter(|d| !d.is_empty())
                    .map(PathBuf::from)
                    .collect()
            }
            "unix_socket_permissions" => self.socket_permissions = v.as_int() as u32, // 0 .. 0777 by the table
            "data_directory" => self.datadir = PathBuf::from(value),
            "authentication_timeout" => self.authentication_timeout = Duration::from_secs(v.as_int() as u64),
            "superuser_reserved_connections" => self.superuser_reserved_connections = v.as_int() as usize,
            "ssl" => self.ssl = v.as_bool(),
            "ssl_cert_file" => self.ssl_cert_file = PathBuf::from(value),
            "ssl_key_file" => self.ssl_key_file = PathBuf::from(value),
            _ => self.settings.set(name, value)?,
        }
        self.overrides.retain(|(n, _)| n != g.name);
        self.overrides.push((g.name.to_string(), shown));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Options, Fatal> {
        Options::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    fn fatal(v: &[&str]) -> String {
        parse(v).unwrap_err().message
    }

    #[test]
    fn postgres_style_flags() {
        let o = parse(&["-D", "/tmp/x", "-p5555", "-k", "/run", "-c", "shared_buffers=1MB", "--fsync=off", "--work-mem=8192"])
            .unwrap();
        assert_eq!(o.datadir, PathBuf::from("/tmp/x"));
        assert_eq!(o.port, 5555);
        assert_eq!(o.socket_dirs, vec![PathBuf::from("/run")]);
        assert_eq!(o.settings.shared_buffers, 128);
        assert!(!o.settings.fsync);
        assert!(o.overrides.contains(&("work_mem".into(), "8MB".into())));
        assert!(o.overrides.contains(&("shared_buffers".into(), "1MB".into())));
    }

    #[test]
    fn bad_flags_are_reported() {
        assert_eq!(fatal(&["-p", "notaport"]), "invalid value for parameter \"port\": \"notaport\"");
        assert_eq!(fatal(&["-p", "0"]), "0 is outside the valid range for parameter \"port\" (1 .. 65535)");
        assert_eq!(fatal(&["-c", "shared_buffers"]), "-c shared_buffers requires a value");
        assert_eq!(fatal(&["--shared-buffers"]), "--shared-buffers requires a value");
        assert_eq!(fatal(&["-c", "shared_buffers=lots"]), "invalid value for parameter \"shared_buffers\": \"lots\"");
        assert_eq!(fatal(&["-c", "shared_bufers=1"]), "unrecognized configuration parameter \"shared_bufers\"");
        assert_eq!(fatal(&["-c", "server_version=1"]), "parameter \"server_version\" cannot be changed");
        assert!(parse(&["-D"]).unwrap_err().usage);
        assert!(parse(&["-x"]).unwrap_err().usage);
        assert!(parse(&["-c", "my.custom=1"]).is_ok());
        // Checked as SET checks them.
        assert_eq!(fatal(&["-c", "DateStyle=nonsense"]), "invalid value for parameter \"DateStyle\": \"nonsense\"");
        assert_eq!(fatal(&["-c", "TimeZone=Mars/Olympus"]), "invalid value for parameter \"TimeZone\": \"Mars/Olympus\"");
        let o = parse(&["-c", "datestyle=sql,dmy"]).unwrap();
        assert!(o.overrides.contains(&("DateStyle".into(), "SQL, DMY".into())), "{:?}", o.overrides);
    }

    #[test]
    fn configuration_files_apply_under_the_command_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("postgresql.conf"), "work_mem = 8MB\nport = 6000\nunix_socket_directories = '/a, \"/b\"'\nunix_socket_permissions = 0770\n").unwrap();
        std::fs::write(dir.path().join("postgresql.auto.conf"), "work_mem = '16MB'\n").unwrap();
        let mut o = parse(&["-p", "5555"]).unwrap();
        o.load_config_files(dir.path()).unwrap();
        assert_eq!(o.port, 5555, "the command line wins");
        assert!(o.overrides.contains(&("work_mem".into(), "16MB".into())), "the auto file wins: {:?}", o.overrides);
        assert_eq!(o.socket_dirs, vec![PathBuf::from("/a"), PathBuf::from("/b")]);
        assert_eq!(o.socket_permissions, 0o770);
        assert!(o.overrides.contains(&("unix_socket_permissions".into(), "0770".into())));

        std::fs::write(dir.path().join("postgresql.conf"), "foo_bar = 1\n").unwrap();
        let shown = dir.path().join("postgresql.conf").display().to_string();
        let e = parse(&[]).unwrap().load_config_files(dir.path()).unwrap_err();
        assert_eq!(e.message, format!("configuration file \"{shown}\" contains errors"));
        let mut o = parse(&[]).unwrap();
        let it = conffile::Item { name: "foo_bar".into(), value: "1".into(), line: 3 };
        assert_eq!(o.set_from_file(&it, "F").unwrap_err().message, "unrecognized configuration parameter \"foo_bar\" in file \"F\" line 3");
    }
}
