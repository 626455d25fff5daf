//! Client authentication rules: PostgreSQL's `pg_hba.conf` (host-based
//! authentication), read from the data directory at start and on reload.
//!
//! The parser lives in the engine's configuration module so that both the wire
//! server (which matches connections against the rules) and the SQL layer
//! (whose `pg_hba_file_rules` view shows the file as it is on disk now, one row
//! per rule or error) read the file the same way.
//!
//! Each non-comment line is a rule `TYPE DATABASE USER [ADDRESS [MASK]] METHOD`.
//! The first rule whose connection type, database, user and client address
//! match a connection decides its method; no matching rule is FATAL 28000 `no
//! pg_hba.conf entry for host "H", user "U", database "D", no encryption`.
//!
//! What is supported (the rest is refused when the file is read, never ignored):
//! - types `local`, `host`, `hostssl`, `hostnossl` (`Client::ssl`: the wire
//!   server's real TLS state);
//! - databases `all`, `sameuser`, `replication` (matches only replication
//!   connections, which ferrogres refuses), names, comma lists, double quotes;
//! - users `all`, names, `+group` (the role `group` and its members, direct
//!   or indirect: [`Client::is_member`], asked of pg_auth_members by the
//!   server), comma lists; `samerole` is `sameuser`;
//! - addresses `all`, `a.b.c.d/n` and IPv6 CIDR, or an address and a mask
//!   field (`127.0.0.1 255.255.255.255`); not host names, `samehost`, `samenet`;
//! - methods `trust`, `reject`, `scram-sha-256`, `md5` (which uses SCRAM when
//!   the role's stored verifier is SCRAM, as PostgreSQL does) and `password`;
//!   the exchanges are the wire server's, the verifiers [`super::password`]'s.

use std::net::IpAddr;

/// A connection's type as pg_hba.conf names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnType {
    Local,
    Host,
    HostSsl,
    HostNoSsl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Trust,
    Reject,
    /// SCRAM-SHA-256 (SASL).
    ScramSha256,
    /// MD5 challenge, or SCRAM when the role's stored verifier is SCRAM.
    Md5,
    /// The password in clear text.
    Password,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Trust => "trust",
            Method::Reject => "reject",
            Method::ScramSha256 => "scram-sha-256",
            Method::Md5 => "md5",
            Method::Password => "password",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Addr {
    All,
    /// Network address and prefix length.
    Cidr(IpAddr, u8),
}

/// One rule (one line of the file).
#[derive(Clone, Debug)]
pub struct Rule {
    pub line: u32,
    pub conn_type: ConnType,
    databases: Vec<String>,
    users: Vec<String>,
    addr: Option<Addr>,
    pub method: Method,
    /// The line as written (for the log's "Connection matched pg_hba.conf line N: ...").
    pub raw: String,
}

/// The rules of one pg_hba.conf, in file order.
#[derive(Clone, Debug)]
pub struct Hba {
    pub rules: Vec<Rule>,
}

impl Default for Hba {
    /// PostgreSQL's initdb default without `-A`: trust on the Unix socket and
    /// loopback TCP, for databases and for replication, nothing else (the
    /// rules of the file initialization writes, `conffile`).
    fn default() -> Hba {
        parse(
            "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n\
             local replication all trust\nhost replication all 127.0.0.1/32 trust\nhost replication all ::1/128 trust\n",
            "default",
        )
            .unwrap_or(Hba { rules: Vec::new() })
    }
}

/// Read and parse the file at `path` (errors as [`parse`] gives them, or the
/// file's I/O error).
pub fn load(path: &std::path::Path) -> Result<Hba, Vec<String>> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![format!("could not open configuration file \"{shown}\": {e}")])?;
    parse(&text, &shown)
}

/// The connection a rule is matched against.
pub struct Client<'a> {
    /// `None`: a Unix-socket connection.
    pub ip: Option<IpAddr>,
    pub ssl: bool,
    pub database: &'a str,
    pub user: &'a str,
    pub replication: bool,
    /// Whether the user is a member of a role (directly or through other
    /// roles, as PostgreSQL's is_member: `+group`); a role is a member of itself.
    pub is_member: &'a dyn Fn(&str) -> bool,
}

/// One field: its comma-separated items, each with whether it was quoted (a
/// quoted `"all"` is a database named all, not the keyword).
fn fields(line: &str) -> Vec<Vec<(String, bool)>> {
    let mut out: Vec<Vec<(String, bool)>> = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.peek() {
            None | Some('#') => break,
            _ => {}
        }
        // A field: items separated by commas, no blanks around them.
        let mut items = Vec::new();
        loop {
            let mut item = String::new();
            let mut quoted = false;
            let mut in_quotes = false;
            while let Some(&c) = chars.peek() {
                if c == '"' {
                    in_quotes = !in_quotes;
                    quoted = true;
                    chars.next();
                    continue;
                }
                if !in_quotes && (c.is_whitespace() || c == ',' || c == '#') {
                    break;
                }
                item.push(c);
                chars.next();
            }
            items.push((item, quoted));
            if chars.peek() == Some(&',') {
                chars.next();
                continue;
            }
            break;
        }
        out.push(items);
    }
    out
}

fn parse_cidr(text: &str, mask: Option<&str>) -> Result<Addr, String> {
    let (ip_text, prefix) = match text.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (text, None),
    };
    let ip: IpAddr = ip_text.parse().map_err(|_| format!("invalid IP address \"{ip_text}\""))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let bits = match (prefix, mask) {
        (Some(p), _) => match p.parse::<u8>() {
            Ok(n) if n <= max => n,
            _ => return Err(format!("invalid CIDR mask in address \"{text}\"")),
        },
        (None, Some(m)) => {
            let m: IpAddr = m.parse().map_err(|_| format!("invalid IP mask \"{m}\""))?;
            let bytes = match (ip, m) {
                (IpAddr::V4(_), IpAddr::V4(m)) => m.octets().to_vec(),
                (IpAddr::V6(_), IpAddr::V6(m)) => m.octets().to_vec(),
                _ => return Err("IP address and mask do not match".into()),
            };
            let ones: u32 = bytes.iter().map(|b| b.count_ones()).sum();
            // A mask must be contiguous ones then zeros.
            let contiguous = bytes.iter().flat_map(|b| (0..8).rev().map(move |i| (b >> i) & 1)).skip_while(|b| *b == 1).all(|b| b == 0);
            if !contiguous {
                return Err(format!("invalid IP mask \"{}\"", m));
            }
            ones as u8
        }
        (None, None) => return Err(format!("invalid IP address \"{text}\"")),
    };
    Ok(Addr::Cidr(ip, bits))
}

/// Every rule line of a file in order, parsed or with its error (without the
/// CONTEXT line): what `pg_hba_file_rules` shows.
pub fn parse_lines(text: &str) -> Vec<(u32, Result<Rule, String>)> {
    text.lines()
        .enumerate()
        .filter_map(|(n, line)| {
            let f = fields(line);
            (!f.is_empty()).then(|| (n as u32 + 1, parse_rule(&f, n as u32 + 1)))
        })
        .collect()
}

impl ConnType {
    pub fn as_str(self) -> &'static str {
        match self {
            ConnType::Local => "local",
            ConnType::Host => "host",
            ConnType::HostSsl => "hostssl",
            ConnType::HostNoSsl => "hostnossl",
        }
    }
}

/// `a.b.c.d` of a prefix length (`netmask` of pg_hba_file_rules).
fn mask_of(ip: IpAddr, bits: u8) -> IpAddr {
    match ip {
        IpAddr::V4(_) => {
            let m = if bits == 0 { 0 } else { u32::MAX << (32 - bits as u32) };
            IpAddr::V4(std::net::Ipv4Addr::from(m))
        }
        IpAddr::V6(_) => {
            let m = if bits == 0 { 0 } else { u128::MAX << (128 - bits as u32) };
            IpAddr::V6(std::net::Ipv6Addr::from(m))
        }
    }
}

impl Rule {
    /// The database field's items, quotes' markers removed.
    pub fn databases(&self) -> Vec<String> {
        self.databases.iter().map(|d| d.trim_start_matches('"').to_string()).collect()
    }

    pub fn users(&self) -> Vec<String> {
        self.users.iter().map(|u| u.trim_start_matches('"').to_string()).collect()
    }

    /// (address, netmask) as pg_hba_file_rules shows them: `None` for local,
    /// `("all", None)`, or the network address and its mask.
    pub fn address(&self) -> Option<(String, Option<String>)> {
        match &self.addr {
            None => None,
            Some(Addr::All) => Some(("all".into(), None)),
            Some(Addr::Cidr(ip, bits)) => Some((ip.to_string(), Some(mask_of(*ip, *bits).to_string()))),
        }
    }
}

/// Parse pg_hba.conf. Errors are PostgreSQL's messages, each with its CONTEXT
/// line (`line N of configuration file "F"`); the caller refuses the whole file
/// when there is any, as PostgreSQL does.
pub fn parse(text: &str, file: &str) -> Result<Hba, Vec<String>> {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n as u32 + 1;
        let f = fields(line);
        if f.is_empty() {
            continue;
        }
        match parse_rule(&f, line_no) {
            Ok(r) => rules.push(Rule { raw: line.trim().to_string(), ..r }),
            Err(e) => errors.push(format!("{e}\nCONTEXT:  line {line_no} of configuration file \"{file}\"")),
        }
    }
    if errors.is_empty() {
        Ok(Hba { rules })
    } else {
        Err(errors)
    }
}

fn single(f: &[(String, bool)]) -> &str {
    f.first().map_or("", |(s, _)| s.as_str())
}

fn parse_rule(f: &[Vec<(String, bool)>], line: u32) -> Result<Rule, String> {
    let conn_type = match single(&f[0]) {
        "local" => ConnType::Local,
        "host" => ConnType::Host,
        "hostssl" => ConnType::HostSsl,
        "hostnossl" => ConnType::HostNoSsl,
        "hostgssenc" | "hostnogssenc" => return Err(format!("connection type \"{}\" is not supported by ferrogres", single(&f[0]))),
        other => return Err(format!("invalid connection type \"{other}\"")),
    };
    let key = |items: &Vec<(String, bool)>| -> Vec<String> {
        items.iter().map(|(s, q)| if *q { format!("\"{s}") } else { s.clone() }).collect()
    };
    let databases = key(f.get(1).ok_or("end-of-line before database specification")?);
    let users = key(f.get(2).ok_or("end-of-line before role specification")?);
    for v in databases.iter().chain(&users) {
        if v.starts_with('@') {
            return Err(format!("file inclusion \"{v}\" is not supported by ferrogres"));
        }
    }
    let mut i = 3;
    let addr = if conn_type == ConnType::Local {
        None
    } else {
        let a = single(f.get(3).ok_or("end-of-line before IP address specification")?);
        i = 4;
        Some(match a {
            "all" => Addr::All,
            "samehost" | "samenet" => return Err(format!("\"{a}\" is not supported by ferrogres")),
            _ if a.contains('/') => parse_cidr(a, None)?,
            _ if a.parse::<IpAddr>().is_ok() => {
                let m = single(f.get(4).ok_or("end-of-line before netmask specification")?);
                i = 5;
                parse_cidr(a, Some(m))?
            }
            _ => return Err(format!("host name \"{a}\" in pg_hba.conf is not supported by ferrogres: use an IP address")),
        })
    };
    let method = match single(f.get(i).ok_or("end-of-line before authentication method")?) {
        "trust" => Method::Trust,
        "reject" => Method::Reject,
        "scram-sha-256" => Method::ScramSha256,
        "md5" => Method::Md5,
        "password" => Method::Password,
        m => return Err(format!("invalid authentication method \"{m}\"")),
    };
    if let Some(opt) = f.get(i + 1) {
        return Err(format!("authentication option \"{}\" is not supported by ferrogres", single(opt)));
    }
    Ok(Rule { line, conn_type, databases, users, addr, method, raw: String::new() })
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (a, b): (Vec<u8>, Vec<u8>) = match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (a.octets().to_vec(), b.octets().to_vec()),
        (IpAddr::V6(a), IpAddr::V6(b)) => (a.octets().to_vec(), b.octets().to_vec()),
        // An IPv4 client on an IPv6 socket shows as ::ffff:a.b.c.d.
        (IpAddr::V6(a), IpAddr::V4(b)) => match a.to_ipv4_mapped() {
            Some(a) => (a.octets().to_vec(), b.octets().to_vec()),
            None => return false,
        },
        _ => return false,
    };
    let mut left = bits as usize;
    for (x, y) in a.iter().zip(&b) {
        if left == 0 {
            break;
        }
        let m: u8 = if left >= 8 { 0xff } else { !(0xffu8 >> left) };
        if x & m != y & m {
            return false;
        }
        left = left.saturating_sub(8);
    }
    true
}

impl Hba {
    /// The first rule matching `c`, if any.
    pub fn find(&self, c: &Client<'_>) -> Option<&Rule> {
        self.rules.iter().find(|r| {
            let type_ok = match (r.conn_type, c.ip) {
                (ConnType::Local, None) => true,
                (ConnType::Host, Some(_)) => true,
                (ConnType::HostSsl, Some(_)) => c.ssl,
                (ConnType::HostNoSsl, Some(_)) => !c.ssl,
                _ => false,
            };
            let addr_ok = match (&r.addr, c.ip) {
                (None, _) | (Some(Addr::All), _) => true,
                (Some(Addr::Cidr(net, bits)), Some(ip)) => in_network(ip, *net, *bits),
                _ => false,
            };
            let db_ok = r.databases.iter().any(|d| match d.as_str() {
                "all" => !c.replication,
                "sameuser" | "samerole" | "samegroup" => !c.replication && c.database == c.user,
                "replication" => c.replication,
                quoted if quoted.starts_with('"') => !c.replication && &quoted[1..] == c.database,
                name => !c.replication && name == c.database,
            });
            let user_ok = r.users.iter().any(|u| match u.as_str() {
                "all" => true,
                group if group.starts_with('+') => &group[1..] == c.user || (c.is_member)(&group[1..]),
                quoted if quoted.starts_with('"') => &quoted[1..] == c.user,
                name => name == c.user,
            });
            type_ok && addr_ok && db_ok && user_ok
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client<'a>(ip: Option<&str>, db: &'a str, user: &'a str) -> Client<'a> {
        Client { ip: ip.map(|i| i.parse().unwrap()), ssl: false, database: db, user, replication: false, is_member: if user == "carol" { &|g: &str| g == "admins" } else { &|_: &str| false } }
    }

    #[test]
    fn rules_match_in_order() {
        let hba = parse(
            "# c\nlocal all all trust\nhost sameuser all 10.0.0.0/8 trust\nhost db1,\"all\" +admins,bob 192.168.1.0 255.255.255.0 trust\n\
             host all bob 0.0.0.0/0 reject\nhostssl all all ::/0 trust\nhostnossl all all ::1/128 trust\n",
            "f",
        )
        .unwrap();
        let line = |c: Client| hba.find(&c).map(|r| r.line);
        assert_eq!(line(client(None, "x", "y")), Some(2));
        assert_eq!(line(client(Some("10.1.2.3"), "ann", "ann")), Some(3));
        assert_eq!(line(client(Some("10.1.2.3"), "db", "ann")), None);
        assert_eq!(line(client(Some("192.168.1.7"), "all", "bob")), Some(4));
        assert_eq!(line(client(Some("192.168.1.7"), "db1", "admins")), Some(4));
        assert_eq!(line(client(Some("192.168.1.7"), "db1", "carol")), Some(4), "a member of +admins");
        assert_eq!(line(client(Some("192.168.1.7"), "db2", "bob")), Some(5));
        assert_eq!(line(client(Some("192.168.2.7"), "db1", "ann")), None);
        assert_eq!(line(client(Some("::1"), "d", "ann")), Some(7));
        assert_eq!(hba.rules[3].method, Method::Reject);
    }

    #[test]
    fn lines_for_the_view() {
        let l = parse_lines("local all all trust\nhost db1,db2 all 10.0.0.0/8 reject\nhost all all ::1/128 trust\nbad\n");
        assert_eq!(l.len(), 4);
        let r = l[1].1.as_ref().unwrap();
        assert_eq!((r.conn_type.as_str(), r.databases(), r.users()), ("host", vec!["db1".to_string(), "db2".into()], vec!["all".to_string()]));
        assert_eq!(r.address(), Some(("10.0.0.0".into(), Some("255.0.0.0".into()))));
        assert_eq!(l[2].1.as_ref().unwrap().address(), Some(("::1".into(), Some("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff".into()))));
        assert_eq!(l[0].1.as_ref().unwrap().address(), None);
        assert_eq!(l[3].1.as_ref().unwrap_err(), "invalid connection type \"bad\"");
    }

    #[test]
    fn bad_lines_are_reported() {
        let e = parse("hots all all trust\nlocal all\nhost all all 1.2.3.4/40 trust\nhost all all 1.2.3.4/32 ident\nhost all all 1.2.3.4/32 md5 x=1\n", "F").unwrap_err();
        assert_eq!(e[0], "invalid connection type \"hots\"\nCONTEXT:  line 1 of configuration file \"F\"");
        assert_eq!(e[1], "end-of-line before role specification\nCONTEXT:  line 2 of configuration file \"F\"");
        assert_eq!(e[2], "invalid CIDR mask in address \"1.2.3.4/40\"\nCONTEXT:  line 3 of configuration file \"F\"");
        assert_eq!(e[3], "invalid authentication method \"ident\"\nCONTEXT:  line 4 of configuration file \"F\"");
        assert!(e[4].starts_with("authentication option \"x=1\" is not supported by ferrogres"));
        let ok = parse("local all all scram-sha-256\nhost all all 0.0.0.0/0 md5\nhost all all ::/0 password\n", "F").unwrap();
        assert_eq!(ok.rules.iter().map(|r| r.method.as_str()).collect::<Vec<_>>(), ["scram-sha-256", "md5", "password"]);
    }
}
