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
    /// PostgreSQL's listen_addresses: comma-separated IPs, "localhost", "*", or "" (no TCP).
    pub listen_addresses: String,
    pub port: u16,
    /// Directory of the Unix socket `.s.PGSQL.<port>`; `None`: no Unix socket.
    pub socket_dir: Option<PathBuf>,
    /// Most sessions at once; one more gets FATAL 53300.
    pub max_connections: usize,
    /// PostgreSQL's authentication_timeout: the whole startup handshake (every
    /// packet before ReadyForQuery) must finish within it.
    pub authentication_timeout: Duration,
    /// The data directory, as line 2 of the socket lock file names it.
    pub data_directory: String,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            listen_addresses: "127.0.0.1".into(),
            port: 5433,
            socket_dir: Some("/tmp".into()),
            max_connections: 100,
            authentication_timeout: Duration::from_secs(60),
            data_directory: String::new(),
        }
    }
}

/// A live connection, as the registry sees it.
pub(crate) struct ConnEntry {
    /// A second handle on the socket, to wake the thread at shutdown.
    stream: Stream,
    pub(crate) interrupts: Arc<Interrupts>,
    /// (pid, secret key) once the connection became a session; protected by `Shared::conns`.
    key: Mutex<Option<(i32, i32)>>,
}

/// State shared by the listener and every connection thread.
pub(crate) struct Shared {
    pub(crate) backend: Arc<dyn Backend>,
    /// Every connection thread alive, by connection number (sessions and those
    /// still in startup). Lock order: `conns` before any `ConnEntry::key`.
    conns: Mutex<HashMap<u64, Arc<ConnEntry>>>,
    max_connections: usize,
    pub(crate) authentication_timeout: Duration,
    /// The next pid to try; pids are unique among live sessions.
    next_pid: AtomicI32,
    shutdown: Arc<AtomicBool>,
}

impl Shared {
    pub(crate) fn terminating(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Admit `entry` as a session if fewer than max_connections are: its (pid, secret).
    pub(crate) fn admit(&self, entry: &Arc<ConnEntry>) -> Option<(i32, i32)> {
        let conns = self.conns.lock().unwrap_or_else(|p| p.into_inner());
        let keys: Vec<(i32, i32)> = conns.values().filter_map(|c| *c.key.lock().unwrap_or_else(|p| p.into_inner())).collect();
        if keys.len() >= self.max_connections {
            return None;
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
        *entry.key.lock().unwrap_or_else(|p| p.into_inner()) = Some((pid, secret));
        Some((pid, secret))
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

/// A bound server, ready to [`Server::run`].
pub struct Server {
    tcp: Vec<TcpListener>,
    unix: Option<UnixSocket>,
    shared: Arc<Shared>,
    next_conn: AtomicU64,
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
    unix: Option<UnixSocket>,
    config: ServerConfig,
}

impl Listeners {
    /// Bind every listening socket (logging each as PostgreSQL does): TCP first,
    /// then the Unix socket under its lock file.
    pub fn bind(config: &ServerConfig) -> io::Result<Listeners> {
        let mut tcp = Vec::new();
        for a in config.listen_addresses.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let ip: IpAddr = match a {
                "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
                "*" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                _ => a.parse().map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidInput, format!("invalid listen address \"{a}\""))
                })?,
            };
            let l = TcpListener::bind(SocketAddr::new(ip, config.port)).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("could not bind {} address \"{ip}\": {e}\nHINT:  Is another postmaster already running on port {}?", if ip.is_ipv4() { "IPv4" } else { "IPv6" }, config.port),
                )
            })?;
            l.set_nonblocking(true)?;
            eprintln!("LOG:  listening on {} address \"{ip}\", port {}", if ip.is_ipv4() { "IPv4" } else { "IPv6" }, config.port);
            tcp.push(l);
        }
        let unix = match &config.socket_dir {
            None => None,
            Some(dir) => {
                let path = dir.join(format!(".s.PGSQL.{}", config.port));
                let lock = socket_lock(&path, dir, config)?;
                let listener = bind_unix(&path)?;
                listener.set_nonblocking(true)?;
                eprintln!("LOG:  listening on Unix socket \"{}\"", path.display());
                Some(UnixSocket { listener, path, lock })
            }
        };
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
            authentication_timeout: self.config.authentication_timeout,
            next_pid: AtomicI32::new((std::process::id() as i32).max(1000)),
            shutdown: Arc::new(AtomicBool::new(false)),
        });
        Server { tcp: self.tcp, unix: self.unix, shared, next_conn: AtomicU64::new(1) }
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

    pub fn shutdown_handle(&self) -> ShutdownHandle {
        ShutdownHandle(self.shared.shutdown.clone())
    }

    /// Accept connections until shut down (by a [`ShutdownHandle`] or, when
    /// [`install_signal_handlers`] was called, SIGTERM/SIGINT). Then every
    /// connection gets FATAL 57P01 and is closed, and the socket file removed.
    pub fn run(self) -> io::Result<()> {
        let wake = wake_pipe_read_fd();
        loop {
            if self.shared.terminating() || signal_received() {
                break;
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
            if let Some(u) = &self.unix {
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
        if let Some(u) = self.unix {
            drop(u.listener);
            let _ = std::fs::remove_file(&u.path);
            drop(u.lock); // removes .s.PGSQL.PORT.lock
        }
        Ok(())
    }

    fn spawn(&self, stream: Stream) {
        let shared = self.shared.clone();
        // Threads in startup are bounded too, like PostgreSQL's 2 * MaxBackends children.
        if shared.live() >= 2 * shared.max_connections + 10 {
            let mut s = stream;
            let _ = s.write_all(&fatal_bytes(&PgError::fatal(b"53300", "sorry, too many clients already")));
            return;
        }
        let Ok(handle) = stream.try_clone() else { return };
        let id = self.next_conn.fetch_add(1, Ordering::Relaxed);
        let entry = Arc::new(ConnEntry { stream: handle, interrupts: Arc::new(Interrupts::new()), key: Mutex::new(None) });
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
fn bind_unix(path: &std::path::Path) -> io::Result<UnixListener> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(io::Error::new(e.kind(), format!("could not remove old socket file \"{}\": {e}", path.display())))
        }
    }
    let l = UnixListener::bind(path)
        .map_err(|e| io::Error::new(e.kind(), format!("could not bind Unix address \"{}\": {e}", path.display())))?;
    // Anyone may connect (PostgreSQL's unix_socket_permissions default 0777);
    // authentication decides who gets in.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o777)).map_err(|e| {
        io::Error::new(e.kind(), format!("could not set permissions of file \"{}\": {e}", path.display()))
    })?;
    Ok(l)
}

// ---- signals -------------------------------------------------------------
//
// SIGTERM and SIGINT set a flag and write a byte to a self-pipe; the accept loop
// polls the pipe, so shutdown starts at once. Both are async-signal-safe.

static SIGNALED: AtomicBool = AtomicBool::new(false);
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
/// and ignore SIGPIPE so a vanished client is an I/O error, not a dead server.
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
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    Ok(())
}
