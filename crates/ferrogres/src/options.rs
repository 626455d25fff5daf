//! Command-line options, PostgreSQL style.

use ferrogres_engine::config::Settings;
use std::path::PathBuf;

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
";

#[derive(Debug)]
pub struct Options {
    pub datadir: PathBuf,
    pub port: u16,
    pub listen: String,
    pub socket_dir: PathBuf,
    pub settings: Settings,
    /// Every `-c` pair as given, for settings outside the engine (server, SQL).
    pub extra: Vec<(String, String)>,
    pub help: bool,
}

impl Options {
    pub fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            datadir: std::env::var_os("PGDATA").map(PathBuf::from).unwrap_or_else(|| "data".into()),
            port: 5433,
            listen: "127.0.0.1".into(),
            socket_dir: PathBuf::from("/tmp"),
            settings: Settings::default(),
            extra: Vec::new(),
            help: false,
        };
        let mut i = 0;
        while i < args.len() {
            let a = args[i].as_str();
            let mut value = |flag: &str| -> Result<String, String> {
                // "-Dvalue" or "-D value"
                if a.len() > 2 {
                    Ok(a[2..].to_string())
                } else {
                    i += 1;
                    args.get(i).cloned().ok_or_else(|| format!("option requires an argument -- '{}'", &flag[1..]))
                }
            };
            match a {
                "--help" | "-?" => o.help = true,
                _ if a.starts_with("-D") => o.datadir = PathBuf::from(value("-D")?),
                _ if a.starts_with("-p") => {
                    let v = value("-p")?;
                    o.port = v.parse().map_err(|_| format!("invalid port number: \"{v}\""))?
                }
                _ if a.starts_with("-h") => o.listen = value("-h")?,
                _ if a.starts_with("-k") => o.socket_dir = PathBuf::from(value("-k")?),
                _ if a.starts_with("-c") => {
                    let v = value("-c")?;
                    o.set_pair(&v)?
                }
                _ if a.starts_with("--") => o.set_pair(&a[2..])?,
                _ => return Err(format!("invalid argument: \"{a}\"")),
            }
            i += 1;
        }
        Ok(o)
    }

    fn set_pair(&mut self, pair: &str) -> Result<(), String> {
        let (name, value) = pair
            .split_once('=')
            .ok_or_else(|| format!("-c {pair} requires a value"))?;
        let name = name.replace('-', "_");
        match name.as_str() {
            "port" => self.port = value.parse().map_err(|_| format!("invalid port number: \"{value}\""))?,
            "listen_addresses" => self.listen = value.to_string(),
            "unix_socket_directories" => self.socket_dir = PathBuf::from(value),
            _ => match self.settings.set(&name, value) {
                Ok(()) => {}
                // Settings the engine does not know may belong to the server or the
                // SQL layer; they are checked there.
                Err(e) if e.sqlstate().as_str() == "42704" => {}
                Err(e) => return Err(e.to_string()),
            },
        }
        self.extra.push((name, value.to_string()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Options, String> {
        Options::parse(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn postgres_style_flags() {
        let o = parse(&["-D", "/tmp/x", "-p5555", "-k", "/run", "-c", "shared_buffers=1MB", "--fsync=off"])
            .unwrap();
        assert_eq!(o.datadir, PathBuf::from("/tmp/x"));
        assert_eq!(o.port, 5555);
        assert_eq!(o.socket_dir, PathBuf::from("/run"));
        assert_eq!(o.settings.shared_buffers, 128);
        assert!(!o.settings.fsync);
    }

    #[test]
    fn bad_flags_are_reported() {
        assert!(parse(&["-p", "notaport"]).is_err());
        assert!(parse(&["-c", "shared_buffers"]).is_err());
        assert!(parse(&["-c", "shared_buffers=lots"]).is_err());
        assert!(parse(&["-D"]).is_err());
    }
}
