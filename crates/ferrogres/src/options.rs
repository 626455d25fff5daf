//! Command-line options, PostgreSQL style, checked before anything else happens.
//!
//! Every setting (`-c name=value`, `--name=value`, and the flags that stand for one:
//! `-p` port, `-h` listen_addresses, `-k` unix_socket_directories) is checked
//! against the table of known settings (`ferrogres_engine::config::guc`): its name,
//! type, unit and range. A bad one is a [`Fatal`] with PostgreSQL's text, and the
//! server exits with status 1 before it touches the data directory.

use ferrogres_engine::config::{guc, Settings};
use std::path::PathBuf;
use std::time::Duration;

pub const USAGE: &str = "\
ferrogres is a PostgreSQL-compatible database server.

Usage:
  ferrogres [OPTION]...

Options:
  -D DATADIR         database directory (default: ./data, or $PGDATA)
  -p PORT            port number to listen on (default: 5433)
  -h HOSTNAME        host name or IP address to listen on (default: 127.0.0.1)
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
    pub socket_dir: PathBuf,
    pub authentication_timeout: Duration,
    pub settings: Settings,
    /// Every setting given, as (table name, value in SHOW's canonical form): the
    /// defaults of the SQL sessions (SHOW shared_buffers, work_mem...).
    pub overrides: Vec<(String, String)>,
    pub help: bool,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, Fatal> {
        let mut o = Options {
            datadir: std::env::var_os("PGDATA").map(PathBuf::from).unwrap_or_else(|| "data".into()),
            port: 5433,
            listen: "127.0.0.1".into(),
            socket_dir: PathBuf::from("/tmp"),
            authentication_timeout: Duration::from_secs(60),
            settings: Settings::default(),
            overrides: Vec::new(),
            help: false,
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
        Ok(o)
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
                // PostgreSQL takes a list; the first directory gets the socket.
                self.socket_dir = PathBuf::from(value.split(',').next().unwrap_or("").trim())
            }
            "data_directory" => self.datadir = PathBuf::from(value),
            "authentication_timeout" => self.authentication_timeout = Duration::from_secs(v.as_int() as u64),
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
        assert_eq!(o.socket_dir, PathBuf::from("/run"));
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
}
