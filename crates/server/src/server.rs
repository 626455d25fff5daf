//! The listener: accepts TCP and Unix-socket connections, one thread each,
//! keeps the registry of live connections (for CancelRequest, max_connections
//! and shutdown) and stops cleanly on request.

use crate::connection;
use crate::error::PgError;
use crate::handler::{Backend, Interrupts};
use crate::lockfile::{LockFile, LockKind};
use crate::stream::Stream;
use std::collections::HashMap;
use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Where and how to listen.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// PostgreSQL's listen_addresses: comma-separated host names or IP addresses,
    /// `*` for every IPv4 and IPv6 address, or "" (no TCP).
    pub listen_addresses: String,
    pub port: u16,
    /// PostgreSQL's unix_socket_directories: a Unix socket `.s.PGSQL.<port>` in
    /// each directory; empty: no Unix socket.
    pub socket_dirs: Vec<PathBuf>,
    /// PostgreSQL's unix_socket_permissions: the mode of each socket file.
    pub socket_permissions: u32,
    /// Most sessions at once; one more gets FATAL 53300.
    pub max_connections: usize,
    /// Most walsenders (replication connections) at once, besides
    /// max_connections; one more gets FATAL 53300 (PostgreSQL's max_wal_senders).
    pub max_wal_senders: usize,
    /// Of max_connections, the slots only superusers may take (53300
    /// "remaining connection slots are reserved ..." for the others).
    pub superuser_reserved_connections: usize,
    /// PostgreSQL's authentication_timeout: the whole startup handshake (every
    /// packet before ReadyForQuery) must finish within it.
    pub authentication_timeout: Duration,
    /// The data directory, as line 2 of the socket lock file names it.
    pub data_directory: String,
    /// The client authentication rules (pg_hba.conf).
    pub hba: Arc<crate::hba::Hba>,
    /// `ssl = on`: the certificate and key SSLRequests are answered with
    /// ([`crate::tls::load`]); `None`: every SSLRequest gets 'N'.
    pub tls: Option<crate::tls::TlsConfig>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen_addresses: "localhost".into(),
            port: 5433,
            socket_dirs: vec!["/tmp".into()],
            socket_permissions: 0o777,
            max_connections: 100,
            max_wal_senders: 10,
            superuser_reserved_connections: 3,
            authentication_timeout: Duration::from_secs(60),
            data_directory: String::new(),
            hba: Arc::new(crate::hba::Hba::default()),
            tls: None,
        }
    }
}

/// The server's settings that a reload (SIGHUP, `pg_reload_conf()`) may change
/// while it runs (PostgreSQL's sighup-context settings the listener reads).
pub struct RuntimeSettings {
    /// authentication_timeout in milliseconds; read at each connection's start.
    authentication_timeout_ms: AtomicU64,
    /// pg_hba.conf's rules; a connection takes the current set at its start.
    hba: Mutex<Arc<crate::hba::Hba>>,
}

impl RuntimeSettings {
    pub fn authentication_timeout(&self) -> Duration {
        Duration::from_millis(self.authentication_timeout_ms.load(Ordering::Relaxed)) // a lone value, no ordering with other data
    }

    pub fn hba(&self) -> Arc<crate::hba::Hba> {
        self.hba.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub fn set_hba(&self, hba: crate::hba::Hba) {
        *self.hba.lock().unwrap_or_else(|p| p.into_inner()) = Arc::new(hba);
    }

    pub fn set_authentication_timeout(&self, d: Duration) {
        self.authentication_timeout_ms.store(d.as_millis() as u64, Ordering::Relaxed); // as above
    }
}

/// A live connection, as the registry sees it.
pub(crate) struct ConnEntry {
    /// A second handle on the socket, to wake the thread at shutdown.
    stream: Stream,
    pub(crate) interrupts: Arc<Interrupts>,
    /// (pid, secret key) once the connection became a session; protected by `Shared::conns`.
    key: Mutex<Option<(i32, i32)>>,
    /// Whether the session is a walsender (counted against max_wal_senders, not
    /// max_connections); set with `key`, under `Shared::conns`.
    walsender: AtomicBool,
}

/// State shared by the listener and every connection thread.
pub(crate) struct Shared {
    pub(crate) backend: Arc<dyn Backend>,
    /// Every connection thread alive, by connection number (sessions and those
    /// still in startup). Lock order: `conns` before any `ConnEntry::key`.
    conns: Mutex<HashMap<u64, Arc<ConnEntry>>>,
    max_connections: usize,
    max_wal_senders: usize,
    pub(crate) superuser_reserved_connections: usize,
    pub(crate) runtime: Arc<RuntimeSettings>,
    /// TLS for SSLRequests on TCP (`ssl = on`), read at start.
    pub(crate) tls: Option<crate::tls::TlsConfig>,
    /// The next pid to try; pids are unique among live sessions.
    next_pid: AtomicI32,
    shutdown: Arc<AtomicBool>,
}

impl Shared {
    pub(crate) fn terminating(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Admit `entry` as a session if fewer than max_connections are (a walsender:
    /// fewer than max_wal_senders walsenders): its (pid, secret) and whether it
    /// took one of the superuser_reserved_connections slots (fewer than that
    /// many were free before it; never for a walsender), else the FATAL.
    pub(crate) fn admit(&self, entry: &Arc<ConnEntry>, walsender: bool) -> Result<(i32, i32, bool), PgError> {
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        let keys: Vec<(i32, i32)> = conns.values().filter_map(|c| *c.key.lock().unwrap_or_else(|p| p.into_inner())).collect();
        // Relaxed: written and read under `conns`.
        let senders = conns
            .values()
            .filter(|c| c.walsender.load(Ordering::Relaxed) && c.key.lock().unwrap_or_else(|p| p.into_inner()).is_some())
            .count();
        if walsender {
            if senders >= self.max_wal_senders {
                return Err(PgError::fatal(
                    b"53300",
                    format!("number of requested standby connections exceeds max_wal_senders (currently {})", self.max_wal_senders),
                ));
            }
        } else if keys.len() - senders >= self.max_connections {
            return Err(PgError::fatal(b"53300", "sorry, too many clients already"));
        }
        let pid = loop {
            let mut p = self.next_pid.fetch_add(1, Ordering::Relaxed); // uniqueness is checked below
            if p <= 0 || p >= i32::MAX - 1 {
                self.next_pid.store(1000, Ordering::Relaxed);
                p = 1000;
            }
            if !keys.iter().any(|(k, _)| *k == p) && !self.backend.pid_in_use(p) {
                break p;
            }
        };
        let secret = rand::random::<i32>();
        entry.walsender.store(walsender, Ordering::Relaxed);
        *entry.key.lock().unwrap_or_else(|p| p.into_inner()) = Some((pid, secret));
        let reserved = !walsender && self.max_connections - (keys.len() - senders) <= self.superuser_reserved_connections;
        Ok((pid, secret, reserved))
    }

    /// CancelRequest: flag the session whose pid and secret both match; else nothing
    /// (PostgreSQL answers a cancel with silence either way).
    pub(crate) fn cancel(&self, pid: i32, secret: i32) {
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        for c in conns.values() {
            if *c.key.lock().unwrap_or_else(|p| p.into_inner()) == Some((pid, secret)) {
                c.interrupts.request_cancel();
                return;
            }
        }
        eprintln!("LOG:  PID {pid} in cancel request did not match any process");
    }

    fn live(&self) -> usize {
        self.conns.lock().unwrap_or_else(|p| p.into_inner()).len()
    }
}

/// What the accept loop calls on SIGHUP ([`Server::on_reload`]).
pub type ReloadHook = Box<dyn FnMut(&RuntimeSettings) + Send>;

/// A bound server, ready to [`Server::run`].
pub struct Server {
    tcp: Vec<TcpListener>,
    unix: Vec<UnixSocket>,
    shared: Arc<Shared>,
    next_conn: AtomicU64,
    /// Called by the accept loop when SIGHUP arrived: re-read the configuration.
    reload: Option<ReloadHook>,
}

/// The Unix socket, its path and its lock file (`.s.PGSQL.PORT.lock`).
struct UnixSocket {
    listener: UnixListener,
    path: PathBuf,
    lock: LockFile,
}

/// Listening sockets bound but not yet serving: the binary binds them (as root, when
/// it starts as root) before it opens the data directory, then makes them a
/// [`Server`] with [`Listeners::into_server`].
pub struct Listeners {
    tcp: Vec<TcpListener>,
    unix: Vec<UnixSocket>,
    config: ServerConfig,
}

impl Listeners {
    /// Bind every listening socket (logging each as PostgreSQL does): TCP first,
    /// then the Unix sockets under their lock files.
    ///
    /// As PostgreSQL's postmaster: each entry of listen_addresses is a host name
    /// or address (`localhost` is every address it resolves to, 127.0.0.1 and
    /// ::1), `*` is 0.0.0.0 and ::; an address that cannot be bound, or a name
    /// that does not resolve, is a WARNING, and the start fails only when
    /// listen_addresses names something and no TCP socket could be made.
    pub fn bind(config: &ServerConfig) -> io::Result<Listeners> {
        let mut tcp = Vec::new();
        let entries: Vec<&str> = config.listen_addresses.split(',').map(str::trim).filter(|a| !a.is_empty()).collect();
        for a in &entries {
            let addrs: Vec<SocketAddr> = if *a == "*" {
                vec![
                    SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), config.port),
                    SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), config.port),
                ]
            } else {
                use std::net::ToSocketAddrs;
                match (*a, config.port).to_socket_addrs() {
                    Ok(it) => {
                        let mut v: Vec<SocketAddr> = Vec::new();
                        for x in it {
                            if !v.contains(&x) {
                                v.push(x);
                            }
                        }
                        v
                    }
                    Err(e) => {
                        eprintln!(
                            "WARNING:  could not translate host name \"{a}\", service \"{}\" to address: {e}",
                            config.port
                        );
                        Vec::new()
                    }
                }
            };
            let before = tcp.len();
            for addr in addrs {
                let family = if addr.is_ipv4() { "IPv4" } else { "IPv6" };
                match bind_tcp(addr) {
                    Ok(l) => {
                        eprintln!("LOG:  listening on {family} address \"{}\", port {}", addr.ip(), config.port);
                        tcp.push(l);
                    }
                    Err(e) => {
                        if e.kind() == io::ErrorKind::AddrInUse {
                            // Another server on this port: as PostgreSQL, a LOG
                            // with the hint, and the start fails below if no
                            // socket could be made at all.
                            eprintln!("LOG:  could not bind {family} address \"{}\": {e}", addr.ip());
                            eprintln!("HINT:  Is another postmaster already running on port {}? If not, wait a few seconds and retry.", config.port);
                        } else {
                            eprintln!("LOG:  could not bind {family} address \"{}\": {e}", addr.ip());
                        }
                    }
                }
            }
            if tcp.len() == before {
                eprintln!("WARNING:  could not create listen socket for \"{a}\"");
            }
        }
        if tcp.is_empty() && !entries.is_empty() {
            return Err(io::Error::new(io::ErrorKind::AddrNotAvailable, "could not create any TCP/IP sockets"));
        }
        let mut unix = Vec::new();
        for dir in &config.socket_dirs {
            let path = dir.join(format!(".s.PGSQL.{}", config.port));
            let lock = socket_lock(&path, dir, config)?;
            let listener = bind_unix(&path, config.socket_permissions)?;
            listener.set_nonblocking(true)?;
            eprintln!("LOG:  listening on Unix socket \"{}\"", path.display());
            unix.push(UnixSocket { listener, path, lock });
        }
        if tcp.is_empty() && unix.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "no socket created for listening"));
        }
        Ok(Listeners { tcp, unix, config: config.clone() })
    }

    /// The files the Unix socket made (the socket and its lock file): a server
    /// started as root hands them to the account it then runs as.
    pub fn socket_files(&self) -> Vec<PathBuf> {
        self.unix.iter().flat_map(|u| [u.path.clone(), u.lock.path().to_path_buf()]).collect()
    }

    /// The TCP port actually bound (useful with port 0).
    pub fn local_port(&self) -> Option<u16> {
        self.tcp.first().and_then(|l| l.local_addr().ok()).map(|a| a.port())
    }

    /// Start serving `backend` on these sockets (see [`Server::run`]).
    pub fn into_server(self, backend: Arc<dyn Backend>) -> Server {
        let shared = Arc::new(Shared {
            backend,
            conns: Mutex::new(HashMap::new()),
            max_connections: self.config.max_connections,
            max_wal_senders: self.config.max_wal_senders,
            superuser_reserved_connections: self.config.superuser_reserved_connections,
            runtime: Arc::new(RuntimeSettings {
                authentication_timeout_ms: AtomicU64::new(self.config.authentication_timeout.as_millis() as u64),
                hba: Mutex::new(self.config.hba.clone()),
            }),
            tls: self.config.tls.clone(),
            next_pid: AtomicI32::new((std::process::id() as i32).max(1000)),
            shutdown: Arc::new(AtomicBool::new(false)),
        });
        Server { tcp: self.tcp, unix: self.unix, shared, next_conn: AtomicU64::new(1), reload: None }
    }
}

/// Stops a running server from another thread (or a signal handler's flag).
#[derive(Clone)]
pub struct ShutdownHandle(Arc<AtomicBool>);

impl ShutdownHandle {
    pub fn shutdown(&self) {
        self.0.store(true, Ordering::SeqCst);
        wake_accept_loop();
    }
}

impl Server {
    /// Bind every listening socket and serve `backend` on them ([`Listeners::bind`]).
    pub fn bind(config: &ServerConfig, backend: Arc<dyn Backend>) -> io::Result<Server> {
        Ok(Listeners::bind(config)?.into_server(backend))
    }

    /// The TCP port actually bound (useful with port 0).
    pub fn local_port(&self) -> Option<u16> {
        self.tcp.first().and_then(|l| l.local_addr().ok()).map(|a| a.port())
    }

    /// What the accept loop does on SIGHUP (after [`install_signal_handlers`]):
    /// PostgreSQL's postmaster re-reads its configuration files there.
    pub fn on_reload(&mut self, f: ReloadHook) {
        self.reload = Some(f);
    }

    /// The settings a reload changes.
    pub fn runtime_settings(&self) -> Arc<RuntimeSettings> {
        self.shared.runtime.clone()
    }

    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.shared.shutdown.clone())
    }

    /// Accept connections until shut down (by a [`ShutdownHandle`] or, when
    /// [`install_signal_handlers`] was called, SIGTERM/SIGINT). Then every
    /// connection gets FATAL 57P01 and is closed, and the socket file removed.
    pub fn run(mut self) -> io::Result<()> {
        let wake = wake_pipe_read_fd();
        loop {
            if self.shared.terminating() || signal_received() {
                break;
            }
            if RELOAD.swap(false, Ordering::SeqCst) {
                eprintln!("LOG:  received SIGHUP, reloading configuration files");
                if let Some(f) = self.reload.as_mut() {
                    f(&self.shared.runtime);
                }
            }
            let mut fds: Vec<libc::pollfd> = self
                .tcp
                .iter()
                .map(|l| l.as_raw_fd())
                .chain(self.unix.iter().map(|u| u.listener.as_raw_fd()))
                .chain(wake)
                .map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 })
                .collect();
            // SAFETY: fds is a valid array of pollfd for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 250) };
            if n <= 0 {
                continue; // timeout or EINTR: re-check the flags
            }
            let mut failed = None;
            for l in &self.tcp {
                loop {
                    match l.accept() {
                        Ok((s, _)) => {
                            let _ = s.set_nonblocking(false);
                            let _ = s.set_nodelay(true);
                            self.spawn(Stream::Tcp(s));
                        }
                        Err(e) => {
                            failed = Some(e);
                            break;
                        }
                    }
                }
            }
            for u in &self.unix {
                loop {
                    match u.listener.accept() {
                        Ok((s, _)) => {
                            let _ = s.set_nonblocking(false);
                            self.spawn(Stream::Unix(s));
                        }
                        Err(e) => {
                            failed = failed.filter(|f: &io::Error| f.kind() != io::ErrorKind::WouldBlock).or(Some(e));
                            break;
                        }
                    }
                }
            }
            if let Some(e) = failed.filter(|e| e.kind() != io::ErrorKind::WouldBlock && e.kind() != io::ErrorKind::Interrupted) {
                // Out of file descriptors, say: don't spin on a listener that stays readable.
                eprintln!("LOG:  could not accept new connection: {e}");
                std::thread::sleep(Duration::from_millis(100));
            }
            if let Some(fd) = wake {
                drain_fd(fd);
            }
        }
        self.shared.shutdown.store(true, Ordering::SeqCst);
        eprintln!("LOG:  received fast shutdown request");
        eprintln!("LOG:  aborting any active transactions");
        drop(self.tcp);
        // Wake every connection: sessions see terminate_pending at their next
        // interrupt check; threads blocked in read() see EOF and send 57P01.
        for c in self.shared.conns.lock().unwrap_or_else(|p| p.into_inner()).values() {
            c.interrupts.request_terminate();
            let _ = c.stream.shutdown(Shutdown::Read);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.shared.live() > 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        for u in self.unix {
            drop(u.listener);
            let _ = std::fs::remove_file(&u.path);
            drop(u.lock); // removes .s.PGSQL.PORT.lock
        }
        Ok(())
    }

    fn spawn(&self, stream: Stream) {
        let shared = self.shared.clone();
        // Threads in startup are bounded too, like PostgreSQL's 2 * MaxBackends children.
        if shared.live() >= 2 * (shared.max_connections + shared.max_wal_senders) + 10 {
            let mut s = stream;
            let _ = s.write_all(&fatal_bytes(&PgError::fatal(b"53300", "sorry, too many clients already")));
            return;
        }
        let Ok(handle) = stream.try_clone() else { return };
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(ConnEntry { stream: handle, interrupts: Arc::new(Interrupts::new()), key: Mutex::new(None), walsender: AtomicBool::new(false) });
        {
            // pg_terminate_backend wakes a session idle in a read. Weak: the
            // entry owns the interrupts, which must not keep the socket open.
            let weak = Arc::downgrade(&entry);
            entry.interrupts.set_on_terminate(Box::new(move || {
                if let Some(e) = weak.upgrade() {
                    let _ = e.stream.shutdown(Shutdown::Read);
                }
            }));
        }
        shared.conns.lock().unwrap_or_else(|p| p.into_inner()).insert(id, entry.clone());
        let panic_stream = entry.stream.try_clone().ok();
        let shared2 = shared.clone();
        let r = std::thread::Builder::new().name(format!("conn-{id}")).stack_size(shared.backend.connection_stack_size()).spawn(move || {
            let e2 = entry.clone();
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| connection::serve(stream, shared2.clone(), e2)));
            if let Err(p) = r {
                let what = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                eprintln!("LOG:  connection {id} ended by an internal error: {what}");
                if let Some(mut s) = panic_stream {
                    let mut e = PgError::internal(format!("internal error: {what}"));
                    e.severity = crate::error::Severity::Fatal;
                    let _ = s.write_all(&fatal_bytes(&e));
                }
            }
            let _ = entry.stream.shutdown(Shutdown::Both);
            shared2.conns.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        });
        if r.is_err() {
            shared.conns.lock().unwrap_or_else(|p| p.into_inner()).remove(&id);
        }
    }
}

fn fatal_bytes(e: &PgError) -> Vec<u8> {
    use pgwire::messages::Message;
    let mut b = bytes::BytesMut::new();
    let _ = pgwire::messages::response::ErrorResponse::new(e.wire_fields()).encode(&mut b);
    b.to_vec()
}

/// A listening TCP socket on `addr`, non-blocking. An IPv6 socket is IPv6 only
/// (as PostgreSQL sets IPV6_V6ONLY), so `*` can bind 0.0.0.0 and :: on one port.
fn bind_tcp(addr: SocketAddr) -> io::Result<TcpListener> {
    use std::os::fd::FromRawFd;
    let domain = if addr.is_ipv4() { libc::AF_INET } else { libc::AF_INET6 };
    // SAFETY: socket(2) makes a new descriptor, owned by the TcpListener below
    // (which closes it) from the moment it exists.
    let fd = unsafe { libc::socket(domain, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fd is a fresh socket we own.
    let listener = unsafe { TcpListener::from_raw_fd(fd) };
    let one: libc::c_int = 1;
    let set = |level, opt| {
        // SAFETY: setsockopt on our socket with a valid int option value.
        unsafe { libc::setsockopt(fd, level, opt, (&one as *const libc::c_int).cast(), std::mem::size_of::<libc::c_int>() as libc::socklen_t) }
    };
    // SO_REUSEADDR, as PostgreSQL: a restart does not wait for TIME_WAIT sockets.
    if set(libc::SOL_SOCKET, libc::SO_REUSEADDR) != 0 {
        return Err(io::Error::last_os_error());
    }
    if addr.is_ipv6() && set(libc::IPPROTO_IPV6, libc::IPV6_V6ONLY) != 0 {
        return Err(io::Error::last_os_error());
    }
    let r = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes(a.ip().octets()) },
                sin_zero: [0; 8],
            };
            // SAFETY: bind with a valid sockaddr_in of the right length.
            unsafe { libc::bind(fd, (&sin as *const libc::sockaddr_in).cast(), std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t) }
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr { s6_addr: a.ip().octets() },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: bind with a valid sockaddr_in6 of the right length.
            unsafe { libc::bind(fd, (&sin6 as *const libc::sockaddr_in6).cast(), std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t) }
        }
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: listen(2) on our bound socket.
    if unsafe { libc::listen(fd, 1024) } != 0 {
        return Err(io::Error::last_os_error());
    }
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// Take the socket's lock file `PATH.lock` (PostgreSQL's CreateSocketLockFile):
/// pid, data directory, start time, port, socket directory.
fn socket_lock(path: &std::path::Path, dir: &std::path::Path, config: &ServerConfig) -> io::Result<LockFile> {
    let lock_path = PathBuf::from(format!("{}.lock", path.display()));
    let shown = lock_path.display().to_string();
    let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let lines = vec![
        std::process::id().to_string(),
        config.data_directory.clone(),
        start.to_string(),
        config.port.to_string(),
        dir.display().to_string(),
    ];
    LockFile::acquire(&lock_path, &shown, LockKind::Socket, &path.display().to_string(), lines)
        .map_err(|e| io::Error::new(io::ErrorKind::AddrInUse, e.to_string()))
}

/// Bind the Unix socket. The caller holds its lock file, so a file at `path` is a
/// leftover of a server that died: it is removed first, as PostgreSQL does.
fn bind_unix(path: &std::path::Path, mode: u32) -> io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(io::Error::new(e.kind(), format!("could not remove old socket file \"{}\": {e}", path.display())))
        }
    }
    let l = UnixListener::bind(path)
        .map_err(|e| io::Error::new(e.kind(), format!("could not bind Unix address \"{}\": {e}", path.display())))?;
    // unix_socket_permissions (default 0777: anyone may connect, authentication
    // decides who gets in).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| {
        io::Error::new(e.kind(), format!("could not set permissions of file \"{}\": {e}", path.display()))
    })?;
    Ok(l)
}

// ---- signals -------------------------------------------------------------
//
// SIGTERM and SIGINT set a flag and write a byte to a self-pipe; the accept loop
// polls the pipe, so shutdown starts at once. Both are async-signal-safe.

static SIGNALED: AtomicBool = AtomicBool::new(false);
/// SIGHUP arrived and the accept loop has not reloaded yet.
static RELOAD: AtomicBool = AtomicBool::new(false);

extern "C" fn on_reload_signal(_sig: libc::c_int) {
    RELOAD.store(true, Ordering::SeqCst);
    wake_accept_loop();
}
static WAKE_READ: AtomicI32 = AtomicI32::new(-1);
static WAKE_WRITE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_shutdown_signal(_sig: libc::c_int) {
    SIGNALED.store(true, Ordering::SeqCst);
    wake_accept_loop();
}

fn wake_accept_loop() {
    let fd = WAKE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write(2) on our own non-blocking pipe; async-signal-safe.
        unsafe {
            libc::write(fd, b"x".as_ptr().cast(), 1);
        }
    }
}

fn wake_pipe_read_fd() -> Option<i32> {
    let fd = WAKE_READ.load(Ordering::SeqCst);
    (fd >= 0).then_some(fd)
}

fn drain_fd(fd: i32) {
    let mut buf = [0u8; 64];
    // SAFETY: read(2) into a local buffer from our non-blocking pipe.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

/// True once SIGTERM or SIGINT arrived (after [`install_signal_handlers`]).
pub fn signal_received() -> bool {
    SIGNALED.load(Ordering::SeqCst)
}

/// Make SIGTERM and SIGINT stop [`Server::run`] (PostgreSQL's "fast" shutdown),
/// SIGHUP run its reload hook ([`Server::on_reload`]), and ignore SIGPIPE so a vanished client is an I/O error, not a dead server.
pub fn install_signal_handlers() -> io::Result<()> {
    let mut fds = [0i32; 2];
    // SAFETY: pipe2 fills two fds; sigaction gets a zeroed struct with a valid handler.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) != 0 {
            return Err(io::Error::last_os_error());
        }
        WAKE_READ.store(fds[0], Ordering::SeqCst);
        WAKE_WRITE.store(fds[1], Ordering::SeqCst);
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_shutdown_signal as *const () as usize;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        for sig in [libc::SIGTERM, libc::SIGINT] {
            if libc::sigaction(sig, &sa, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        sa.sa_sigaction = on_reload_signal as *const () as usize;
        if libc::sigaction(libc::SIGHUP, &sa, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    Ok(())
}
