//! One client connection: the startup handshake and the message loop, run on
//! the connection's own thread. See README.md for the state machines.

use crate::error::{wire_str, PgError};
use crate::handler::{Disconnect, 
    CopyInEvent, ExecuteOutcome, FieldInfo, Interrupts, Replication, ResultSink, Session, StartupInfo, TransactionStatus,
};
use crate::protocol::{self, Frontend};
use crate::server::{ConnEntry, Shared};
use crate::stream::Stream;
use bytes::{BufMut, BytesMut};
use pgwire::messages::copy::{CopyData, CopyDone, CopyInResponse, CopyOutResponse};
use pgwire::messages::data::ParameterDescription;
use pgwire::messages::extendedquery::{CloseComplete, PortalSuspended};
use pgwire::messages::response::{
    EmptyQueryResponse, ErrorResponse, NoticeResponse, NotificationResponse,
};
use pgwire::messages::startup::{Authentication, BackendKeyData, NegotiateProtocolVersion, ParameterStatus, SecretKey};
use pgwire::messages::{Message, PgWireFrontendMessage};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::Arc;
use std::time::Instant;
use ferrogres_engine::memacct;
use ferrogres_engine::notify::NotifySignal;

/// A session that grew by more than this between two ReadyForQuery messages
/// gives its free memory back to the operating system at the second
/// (`memacct::release`): the allocator would otherwise keep it resident while
/// the session idles.
const RELEASE_AFTER: usize = 64 << 20;

/// Output is flushed when this much is buffered, besides at ReadyForQuery/Flush.
const FLUSH_THRESHOLD: usize = 64 * 1024;

/// Why the message loop stopped.
enum End {
    /// Terminate, EOF, or a FATAL error already sent: close quietly.
    Closed,
}

/// The socket halves and the output buffer. Separate from the session so a
/// session method can borrow it as its `ResultSink`.
pub(crate) struct Io {
    reader: BufReader<Stream>,
    writer: Stream,
    out: BytesMut,
    /// Set when the client broke the protocol in a way that loses message
    /// boundaries (a foreign message during COPY IN): the connection must end.
    sync_lost: bool,
    /// A FATAL error was sent: the session ends because of it.
    fatal_sent: bool,
}

impl Io {
    fn new(stream: Stream) -> io::Result<Io> {
        let writer = stream.try_clone()?;
        Ok(Io { reader: BufReader::with_capacity(16 * 1024, stream), writer, out: BytesMut::with_capacity(8192), sync_lost: false, fatal_sent: false })
    }

    /// A message of type `t` whose body `body` writes straight into the
    /// output buffer ([`put_framed`]): the hot messages of a query.
    #[inline]
    fn put_message(&mut self, t: u8, body: impl FnOnce(&mut BytesMut)) -> Result<(), PgError> {
        put_framed(&mut self.out, t, body)?;
        if self.out.len() >= FLUSH_THRESHOLD {
            self.flush()?;
        }
        Ok(())
    }

    /// A message with an empty body (ParseComplete, BindComplete, NoData, ...).
    fn send_empty(&mut self, t: u8) -> Result<(), PgError> {
        self.put_message(t, |_| {})
    }

    /// RowDescription for `fields`.
    fn send_row_description(&mut self, fields: &[FieldInfo]) -> Result<(), PgError> {
        self.put_message(b'T', |b| encode_row_description(b, fields))
    }

    /// CommandComplete with `tag`.
    fn send_command_complete(&mut self, tag: &str) -> Result<(), PgError> {
        self.put_message(b'C', |b| put_cstr(b, tag))
    }

    /// A message of type `t` with body `body`, framed by hand (CopyBothResponse,
    /// CopyData of the replication stream).
    pub(crate) fn send_raw(&mut self, t: u8, body: &[u8]) -> Result<(), PgError> {
        self.out.put_u8(t);
        self.out.put_i32(body.len() as i32 + 4);
        self.out.put_slice(body);
        if self.out.len() >= FLUSH_THRESHOLD {
            self.flush()?;
        }
        Ok(())
    }

    fn send<M: Message>(&mut self, m: &M) -> Result<(), PgError> {
        m.encode(&mut self.out).map_err(|e| PgError::internal(format!("could not encode message: {e}")))?;
        if self.out.len() >= FLUSH_THRESHOLD {
            self.flush()?;
        }
        Ok(())
    }

    pub(crate) fn flush(&mut self) -> Result<(), PgError> {
        if self.out.is_empty() {
            return Ok(());
        }
        let r = self.writer.write_all(&self.out).and_then(|_| self.writer.flush());
        self.out.clear();
        r.map_err(|e| PgError::connection_failure(format!("could not send data to client: {e}")))
    }

    fn send_error(&mut self, e: &PgError) -> Result<(), PgError> {
        self.fatal_sent |= e.severity.ends_session();
        self.send(&ErrorResponse::new(e.wire_fields()))
    }

    /// Waits up to `timeout` for the first byte of the next message while the
    /// session is idle: `true` when something arrived (or EOF/an error, which the
    /// next read reports), `false` when the timeout passed with nothing read.
    pub(crate) fn wait_readable(&mut self, timeout: std::time::Duration) -> bool {
        if !self.reader.buffer().is_empty() {
            return true;
        }
        if self.reader.get_ref().set_read_timeout(Some(timeout.max(std::time::Duration::from_millis(1)))).is_err() {
            return true;
        }
        let r = loop {
            match self.reader.fill_buf() {
                Ok(_) => break true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break !matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut),
            }
        };
        let _ = self.reader.get_ref().set_read_timeout(None);
        r
    }

    /// Waits until the client's socket is readable (`true`, also for EOF or an
    /// error, which the next read reports) or `other` is (`false`), at most
    /// `timeout` (`None`: no limit; `false` when it passes).
    pub(crate) fn wait_readable_or(&mut self, other: std::os::fd::RawFd, timeout: Option<std::time::Duration>) -> bool {
        if !self.reader.buffer().is_empty() {
            return true;
        }
        let tls = matches!(self.reader.get_ref(), Stream::Tls(_));
        // rustls may hold decrypted bytes the socket no longer shows: one
        // short read through the TLS session finds them first.
        if tls && self.wait_readable(std::time::Duration::from_millis(1)) {
            return true;
        }
        let sock = self.reader.get_ref().raw_fd();
        let mut fds = [
            libc::pollfd { fd: sock, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: other, events: libc::POLLIN, revents: 0 },
        ];
        let ms = timeout.map_or(-1, |t| t.as_millis().clamp(1, i32::MAX as u128) as i32);
        loop {
            // SAFETY: two valid pollfds in a live array.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if n < 0 && std::io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            // An error from poll itself: let the read report what is wrong.
            return n < 0 || fds[0].revents != 0;
        }
    }

    /// Read one message after startup: `Ok(None)` on EOF. A bad frame (length out
    /// of range, unknown type) is a FATAL 08P01: message boundaries are lost.
    pub(crate) fn read_message(&mut self) -> Result<Option<(u8, Vec<u8>)>, PgError> {
        let Some(t) = self.read_type() else { return Ok(None) };
        if !protocol::is_known_type(t) {
            return Err(PgError::protocol_fatal(format!("invalid frontend message type {t}")));
        }
        self.read_body(t)
    }

    /// A message's type byte: `None` on EOF.
    fn read_type(&mut self) -> Option<u8> {
        let mut t = [0u8; 1];
        loop {
            match self.reader.read(&mut t) {
                Ok(0) => return None,
                Ok(_) => return Some(t[0]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => return None,
            }
        }
    }

    /// The length word and body of a message of type `t`: `Ok(None)` on EOF.
    fn read_body(&mut self, t: u8) -> Result<Option<(u8, Vec<u8>)>, PgError> {
        let mut len = [0u8; 4];
        if self.reader.read_exact(&mut len).is_err() {
            return Ok(None);
        }
        let len = i32::from_be_bytes(len);
        if len < 4 || len as usize > protocol::max_length(t) {
            // PostgreSQL only logs this one ("invalid message length") and hangs up;
            // telling the client costs nothing and helps whoever wrote it.
            return Err(PgError::protocol_fatal("invalid message length"));
        }
        let want = len as usize - 4;
        // The usual case: the whole body is already buffered (pipelined
        // Bind/Describe/Execute/Sync arrive in one read): one copy, no read
        // loop.
        let buffered = self.reader.buffer();
        if buffered.len() >= want {
            let body = buffered[..want].to_vec();
            self.reader.consume(want);
            return Ok(Some((t, body)));
        }
        // Grow with the data actually received, so a large declared length from a
        // client that then sends little costs little.
        let mut body = Vec::with_capacity(want.min(64 * 1024));
        match (&mut self.reader).take(want as u64).read_to_end(&mut body) {
            Ok(n) if n == want => Ok(Some((t, body))),
            // EOF inside a message: PostgreSQL logs "unexpected EOF within message
            // length word" and exits; nobody is there to read an error.
            _ => Ok(None),
        }
    }
}

impl crate::auth::AuthIo for Io {
    fn send_message(&mut self, t: u8, body: &[u8]) -> Result<(), PgError> {
        self.out.extend_from_slice(&[t]);
        self.out.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
        self.out.extend_from_slice(body);
        self.flush()
    }

    fn read_password_message(&mut self, deadline: Instant, expected: &str) -> Result<Option<Vec<u8>>, PgError> {
        let mut t = [0u8; 1];
        if !read_by(self, &mut t, deadline) {
            return Ok(None);
        }
        if t[0] != b'p' {
            return Err(PgError::protocol_fatal(format!("expected {expected} response, got message type {}", t[0])));
        }
        let mut len = [0u8; 4];
        if !read_by(self, &mut len, deadline) {
            return Ok(None);
        }
        let len = i32::from_be_bytes(len);
        if len < 4 || len as usize - 4 > crate::auth::MAX_AUTH_TOKEN {
            return Err(PgError::protocol_fatal("invalid message length"));
        }
        let mut body = vec![0u8; len as usize - 4];
        if !read_by(self, &mut body, deadline) {
            return Ok(None);
        }
        Ok(Some(body))
    }
}

/// The connection after startup: its session and protocol state.
pub(crate) struct Connection {
    io: Io,
    session: Box<dyn Session>,
    interrupts: Arc<Interrupts>,
    /// After an error in an extended-query message, skip messages until Sync.
    ignore_till_sync: bool,
    /// The last message sent was ReadyForQuery: the session is idle, and the
    /// idle timeouts apply to the wait for the next message.
    at_ready: bool,
    /// The walsender of a replication connection (`replication=true/database`).
    walsender: Option<crate::walsender::WalSender>,
    /// The client sent Terminate.
    said_goodbye: bool,
}

/// Entry point of a connection thread.
pub(crate) fn serve(stream: Stream, shared: Arc<Shared>, entry: Arc<ConnEntry>) {
    let io = match Io::new(stream) {
        Ok(io) => io,
        Err(_) => return,
    };
    let mut conn = match startup(io, &shared, &entry) {
        Some(c) => c,
        None => return,
    };
    conn.interrupts.set_client_socket(conn.io.reader.get_ref().raw_fd());
    let End::Closed = conn.run();
    conn.interrupts.set_client_socket(-1);
    // How it ended, for pg_stat_database (PostgreSQL's pgStatSessionEndCause):
    // an operator's terminate request wins over the FATAL it causes.
    let cause = if conn.interrupts.terminate_requested() {
        Disconnect::Killed
    } else if conn.said_goodbye {
        Disconnect::Normal
    } else if conn.io.fatal_sent {
        Disconnect::Fatal
    } else {
        Disconnect::ClientEof
    };
    conn.session.disconnected(cause);
    conn.session.terminate();
    let _ = conn.io.flush();
}

fn fatal_and_close(io: &mut Io, e: PgError) {
    let _ = io.send_error(&e);
    let _ = io.flush();
}

/// Fill `buf` from the socket before `deadline`: `false` on EOF, an error, or the
/// deadline passing. The read timeout is set to what is left before every read, so
/// a client trickling a byte at a time cannot stretch the handshake past the
/// deadline (a per-read timeout would restart with each byte).
fn read_by(io: &mut Io, buf: &mut [u8], deadline: Instant) -> bool {
    let mut off = 0;
    while off < buf.len() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || io.reader.get_ref().set_read_timeout(Some(left)).is_err() {
            return false;
        }
        match io.reader.read(&mut buf[off..]) {
            Ok(0) => return false,
            Ok(n) => off += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false, // WouldBlock/TimedOut: the deadline passed
        }
    }
    true
}

/// Read a startup-phase packet (no type byte) before `deadline`: `None` on EOF or
/// timeout (PostgreSQL closes such a connection without a message).
fn read_startup_packet(io: &mut Io, deadline: Instant) -> Result<Option<Vec<u8>>, PgError> {
    let mut len = [0u8; 4];
    if !read_by(io, &mut len, deadline) {
        return Ok(None);
    }
    // Checked as PostgreSQL does: the length counts itself, the limit does not.
    let len = i32::from_be_bytes(len);
    if len < 8 || len as usize - 4 > protocol::MAX_STARTUP_PACKET_LEN {
        return Err(PgError::protocol_fatal("invalid length of startup packet"));
    }
    let mut body = vec![0u8; len as usize - 4];
    if !read_by(io, &mut body, deadline) {
        return Ok(None);
    }
    Ok(Some(body))
}

/// The TLS handshake after an 'S', under the startup deadline: the connection's
/// I/O over TLS, or `None` (logged as PostgreSQL does) when it fails.
fn tls_handshake(io: Io, config: crate::tls::TlsConfig, deadline: Instant) -> Option<Io> {
    let Io { reader, writer, .. } = io;
    drop(writer);
    let Stream::Tcp(mut sock) = reader.into_inner() else { return None };
    let mut conn = match rustls::ServerConnection::new(config) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("LOG:  could not initialize SSL connection: {e}");
            return None;
        }
    };
    while conn.is_handshaking() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || sock.set_read_timeout(Some(left)).is_err() {
            return None;
        }
        match conn.complete_io(&mut sock) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => return None,
            Err(e) => {
                // The client may have been told already (a TLS alert); the log says why.
                eprintln!("LOG:  could not accept SSL connection: {e}");
                return None;
            }
        }
    }
    let stream = Stream::Tls(Arc::new(std::sync::Mutex::new(rustls::StreamOwned::new(conn, sock))));
    Io::new(stream).ok()
}

/// The startup state machine:
/// (SSLRequest|GSSENCRequest -> 'N')* then CancelRequest (-> close) or
/// StartupMessage -> [NegotiateProtocolVersion] AuthenticationOk ParameterStatus*
/// BackendKeyData ReadyForQuery.
fn startup(mut io: Io, shared: &Arc<Shared>, entry: &Arc<ConnEntry>) -> Option<Connection> {
    // authentication_timeout bounds the whole handshake, not each read.
    let deadline = Instant::now() + shared.runtime.authentication_timeout();
    // Each encryption request may come once (in either order), as in
    // PostgreSQL; a second one is read as a StartupMessage of protocol
    // 1234.5679 or 1234.5680 and refused.
    let (mut ssl_done, mut gss_done) = (false, false);
    let body = loop {
        let body = match read_startup_packet(&mut io, deadline) {
            Ok(Some(b)) => b,
            Ok(None) => return None,
            Err(e) => {
                fatal_and_close(&mut io, e);
                return None;
            }
        };
        let code = i32::from_be_bytes([body[0], body[1], body[2], body[3]]);
        let ssl = code == protocol::SSL_REQUEST_CODE;
        match code {
            protocol::SSL_REQUEST_CODE | protocol::GSSENC_REQUEST_CODE if !(if ssl { ssl_done } else { gss_done }) => {
                // TLS when ssl = on and the client came over TCP (PostgreSQL
                // refuses SSL on a Unix socket); no GSSAPI encryption: 'N', the
                // client goes on in clear.
                let tls = if ssl && matches!(io.reader.get_ref(), Stream::Tcp(_)) { shared.tls.clone() } else { None };
                if io.writer.write_all(if tls.is_some() { b"S" } else { b"N" }).is_err() {
                    return None;
                }
                if ssl {
                    ssl_done = true;
                } else {
                    gss_done = true;
                }
                // A client must wait for the answer: bytes it sent before it
                // came are refused, as PostgreSQL refuses them (CVE-2021-23214).
                if !io.reader.buffer().is_empty() {
                    let what = if ssl { "SSL request" } else { "GSSAPI encryption request" };
                    fatal_and_close(
                        &mut io,
                        PgError::protocol_fatal(format!("received unencrypted data after {what}")).with_detail(
                            "This could be either a client-software bug or evidence of an attempted man-in-the-middle attack.",
                        ),
                    );
                    return None;
                }
                if let Some(config) = tls {
                    io = tls_handshake(io, config, deadline)?;
                }
                continue;
            }
            protocol::CANCEL_REQUEST_CODE => {
                // PostgreSQL logs a CancelRequest of the wrong length and hangs up.
                if body.len() == 12 {
                    let pid = i32::from_be_bytes([body[4], body[5], body[6], body[7]]);
                    let key = i32::from_be_bytes([body[8], body[9], body[10], body[11]]);
                    shared.cancel(pid, key);
                } else {
                    eprintln!("LOG:  invalid length of startup packet");
                }
                return None;
            }
            _ => break body,
        }
    };
    let major = u16::from_be_bytes([body[0], body[1]]);
    let minor = u16::from_be_bytes([body[2], body[3]]);
    if major != 3 {
        fatal_and_close(
            &mut io,
            PgError::fatal(b"0A000", format!("unsupported frontend protocol {major}.{minor}: server supports 3.0 to 3.0")),
        );
        return None;
    }
    // name\0value\0 ... \0. Only the layout is checked here: bytes that are not
    // UTF-8 are no layout error (PostgreSQL reads them as they are and then finds
    // no such role or database); they reach the session replaced by U+FFFD.
    let mut params: Vec<(String, String)> = Vec::new();
    let mut r = protocol::BodyReader::new(&body[4..]);
    let layout = PgError::protocol_fatal("invalid startup packet layout: expected terminator as last byte");
    loop {
        let name = match r.cstring_bytes() {
            Ok(n) => String::from_utf8_lossy(n).into_owned(),
            Err(_) => {
                fatal_and_close(&mut io, layout);
                return None;
            }
        };
        if name.is_empty() {
            break;
        }
        match r.cstring_bytes() {
            Ok(v) => params.push((name, String::from_utf8_lossy(v).into_owned())),
            Err(_) => {
                fatal_and_close(&mut io, layout);
                return None;
            }
        }
    }
    if r.end().is_err() {
        fatal_and_close(&mut io, layout);
        return None;
    }
    // Protocol 3.x with x > 0, or _pq_ options: tell the client what we speak
    // (PostgreSQL does so right after reading the packet, before any check).
    let unknown_opts: Vec<String> = params.iter().filter(|(n, _)| n.starts_with("_pq_.")).map(|(n, _)| n.clone()).collect();
    if minor > 0 || !unknown_opts.is_empty() {
        let m = NegotiateProtocolVersion::new(pgwire::messages::startup::Startup::PROTOCOL_VERSION_3_0, unknown_opts);
        if io.send(&m).is_err() {
            return None;
        }
    }
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let Some(user) = get("user").filter(|u| !u.is_empty()) else {
        fatal_and_close(&mut io, PgError::fatal(b"28000", "no PostgreSQL user name specified in startup packet"));
        return None;
    };
    let database = get("database").filter(|d| !d.is_empty()).unwrap_or_else(|| user.clone());
    // replication=true/database: a walsender (PostgreSQL's am_walsender).
    let replication = match get("replication") {
        None => Replication::No,
        Some(v) => match Replication::parse(&v) {
            Some(r) => r,
            None => {
                let mut e = PgError::fatal(b"22023", format!("invalid value for parameter \"replication\": \"{v}\""));
                e.hint = Some("Valid values are: \"false\", 0, \"true\", 1, \"database\".".into());
                fatal_and_close(&mut io, e);
                return None;
            }
        },
    };
    let engine = if replication == Replication::No { None } else { shared.backend.engine() };
    if replication != Replication::No && engine.is_none() {
        fatal_and_close(&mut io, PgError::fatal(b"0A000", "this server does not support the replication protocol"));
        return None;
    }
    let client_addr = io.reader.get_ref().peer_description();
    // pg_hba.conf: the first rule matching the connection decides.
    let peer_ip = io.reader.get_ref().peer_ip();
    let host = peer_ip.map_or_else(|| "[local]".to_string(), |ip| ip.to_string());
    let hba = shared.runtime.hba();
    let ssl_info = io.reader.get_ref().ssl_info();
    let encryption = if ssl_info.is_some() { "SSL encryption" } else { "no encryption" };
    let backend = shared.backend.clone();
    let is_member = |group: &str| backend.is_member(&user, group);
    let client = crate::hba::Client {
        ip: peer_ip,
        ssl: ssl_info.is_some(),
        database: &database,
        user: &user,
        replication: replication == Replication::Physical,
        is_member: &is_member,
    };
    let rule = match hba.find(&client) {
        Some(r) if r.method == crate::hba::Method::Reject => {
            fatal_and_close(
                &mut io,
                PgError::fatal(
                    b"28000",
                    if replication == Replication::Physical {
                        format!("pg_hba.conf rejects replication connection for host \"{host}\", user \"{user}\", {encryption}")
                    } else {
                        format!("pg_hba.conf rejects connection for host \"{host}\", user \"{user}\", database \"{database}\", {encryption}")
                    },
                ),
            );
            return None;
        }
        Some(r) => r.clone(),
        None => {
            fatal_and_close(
                &mut io,
                PgError::fatal(
                    b"28000",
                    if replication == Replication::Physical {
                        format!("no pg_hba.conf entry for replication connection from host \"{host}\", user \"{user}\", {encryption}")
                    } else {
                        format!("no pg_hba.conf entry for host \"{host}\", user \"{user}\", database \"{database}\", {encryption}")
                    },
                ),
            );
            return None;
        }
    };
    if shared.terminating() {
        fatal_and_close(&mut io, PgError::fatal(b"57P03", "the database system is shutting down"));
        return None;
    }
    let (pid, secret, reserved_slot) = match shared.admit(entry, replication != Replication::No) {
        Ok(k) => k,
        Err(e) => {
            fatal_and_close(&mut io, e);
            return None;
        }
    };
    // Authentication by the rule's method (crate::auth), after the slot is
    // taken, as PostgreSQL authenticates in the forked backend.
    // Looked up only when needed: trust with a free slot costs nothing more.
    let role = if rule.method != crate::hba::Method::Trust || reserved_slot { shared.backend.role_auth(&user, pid) } else { None };
    if rule.method != crate::hba::Method::Trust {
        match crate::auth::authenticate(&mut io, &rule, &user, role.as_ref(), deadline) {
            Ok(()) => {}
            Err(crate::auth::AuthFailure::Eof) => {
                let _ = io.flush();
                return None;
            }
            Err(crate::auth::AuthFailure::Fatal(e)) => {
                fatal_and_close(&mut io, e);
                return None;
            }
        }
    }
    // The last superuser_reserved_connections slots are for superusers
    // (PostgreSQL's InitPostgres check, after authentication).
    if reserved_slot && !role.as_ref().is_some_and(|r| r.superuser) {
        fatal_and_close(&mut io, PgError::fatal(b"53300", "remaining connection slots are reserved for non-replication superuser connections"));
        return None;
    }
    let info = StartupInfo {
        user,
        database,
        application_name: get("application_name").unwrap_or_default(),
        parameters: params,
        backend_pid: pid,
        client_addr,
        ssl: ssl_info,
        replication,
    };
    let interrupts = entry.interrupts.clone();
    // Authenticated: AuthenticationOk comes before the session is made,
    // so an unknown database or a bad setting is a FATAL after it, as in
    // PostgreSQL (InitPostgres runs after authentication).
    if io.send(&Authentication::Ok).is_err() {
        return None;
    }
    let session = match shared.backend.new_session(&info, interrupts.clone()) {
        Ok(s) => s,
        Err(mut e) => {
            if !e.severity.ends_session() {
                e.severity = crate::error::Severity::Fatal;
            }
            fatal_and_close(&mut io, e);
            return None;
        }
    };
    let _ = io.reader.get_ref().set_read_timeout(None);
    let mut ok = true;
    for (k, v) in session.reported_parameters() {
        ok &= io.send(&ParameterStatus::new(wire_str(&k), wire_str(&v))).is_ok();
    }
    ok &= io.send(&BackendKeyData::new(pid, SecretKey::I32(secret))).is_ok();
    let walsender = engine.map(|e| crate::walsender::WalSender::new(e, &info));
    let mut conn = Connection { io, session, interrupts, ignore_till_sync: false, at_ready: true, walsender, said_goodbye: false };
    ok &= conn.ready_for_query().is_ok();
    if !ok {
        conn.session.terminate();
        return None;
    }
    Some(conn)
}

impl Connection {
    /// ParameterStatus for changed reported settings, then ReadyForQuery, then flush.
    fn ready_for_query(&mut self) -> Result<(), PgError> {
        for (k, v) in self.session.take_parameter_changes() {
            self.io.send(&ParameterStatus::new(wire_str(&k), wire_str(&v)))?;
        }
        let status = self.session.transaction_status();
        if matches!(status, TransactionStatus::Idle) {
            self.send_notifications()?;
        }
        self.io.put_message(b'Z', |b| b.extend_from_slice(&[status_byte(status)]))?;
        self.at_ready = true;
        self.io.flush()?;
        // What the session grew by since its last ReadyForQuery (a large
        // statement, its state dropped by now) goes back to the operating
        // system, after the client has its answer.
        if memacct::grew() {
            memacct::release();
        }
        memacct::watch(RELEASE_AFTER);
        Ok(())
    }

    /// NotificationResponse for each notification waiting for the session
    /// (called only outside a transaction block, as PostgreSQL delivers them).
    fn send_notifications(&mut self) -> Result<bool, PgError> {
        let notes = self.session.take_notifications();
        for (pid, channel, payload) in &notes {
            self.io.send(&NotificationResponse::new(*pid, wire_str(channel), wire_str(payload)))?;
        }
        Ok(!notes.is_empty())
    }

    /// The wait for the client's next message while the session is idle
    /// outside a transaction block and listens: notifications committed by
    /// other sessions meanwhile are sent as they come. The wait polls the
    /// client's socket and the listener's eventfd together, so a committed
    /// NOTIFY wakes it at once (without an eventfd, the signal is checked
    /// every `NOTIFY_POLL`). `Ok(true)`: a message (or EOF) is there;
    /// `Ok(false)`: `timeout` passed first.
    fn wait_listening(&mut self, signal: &NotifySignal, timeout: Option<std::time::Duration>) -> Result<bool, PgError> {
        const NOTIFY_POLL: std::time::Duration = std::time::Duration::from_millis(20);
        let deadline = timeout.map(|t| Instant::now() + t);
        let wake = signal.fd();
        loop {
            if signal.is_set() && self.send_notifications()? {
                self.io.flush()?;
            }
            let left = match deadline {
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(false);
                    }
                    Some(left)
                }
                None => None,
            };
            let ready = match wake {
                Some(fd) => self.io.wait_readable_or(fd, left),
                None => self.io.wait_readable(left.map_or(NOTIFY_POLL, |l| l.min(NOTIFY_POLL))),
            };
            if ready {
                return Ok(true);
            }
        }
    }

    /// Report `e` to the client; `Err` if the connection must end now.
    fn report(&mut self, mut e: PgError) -> Result<(), End> {
        if self.interrupts.terminate_requested() && !e.severity.ends_session() {
            // Whatever the statement failed with (a lock wait woken by the
            // terminate request says 57014), the session ends as terminated.
            e = PgError::admin_shutdown();
        }
        let fatal = e.severity.ends_session();
        // Errors are flushed at once (as PostgreSQL does), so a client that sent
        // no Sync yet still sees why its pipeline stopped.
        if self.io.send_error(&e).and_then(|_| self.io.flush()).is_err() {
            return Err(End::Closed);
        }
        if fatal || e.code == *b"08006" {
            let _ = self.io.flush();
            return Err(End::Closed);
        }
        if self.io.sync_lost {
            let _ = self.io.send_error(&PgError::protocol_fatal(
                "terminating connection because protocol synchronization was lost",
            ));
            let _ = self.io.flush();
            return Err(End::Closed);
        }
        Ok(())
    }

    /// Report an error from an extended-query message and start skipping to Sync.
    fn report_extended(&mut self, e: PgError) -> Result<(), End> {
        self.ignore_till_sync = true;
        self.report(e)
    }

    fn run(&mut self) -> End {
        loop {
            // Idle between commands: idle_in_transaction_session_timeout inside
            // a transaction block (failed or not), idle_session_timeout outside
            // one; either one ends the connection with its FATAL.
            // Only after ReadyForQuery, as PostgreSQL arms these timers.
            let idle = if self.at_ready { self.session.idle_timeouts() } else { Default::default() };
            // The error is built only when the timeout fires (a function, not a
            // value: this runs before every message).
            let (mut timeout, err): (_, fn() -> PgError) = match self.session.transaction_status() {
                TransactionStatus::Idle => (idle.session, PgError::idle_session_timeout),
                _ => (idle.in_transaction, PgError::idle_in_transaction_timeout),
            };
            let listening = if self.at_ready && matches!(self.session.transaction_status(), TransactionStatus::Idle) {
                self.session.notify_flag()
            } else {
                None
            };
            // Statistics still pending (flushed at most once a second): come
            // back for them after that much idleness, unless a message or an
            // idle timeout comes first; the idle timeout keeps its length. A
            // listening session polls for notifications as it waits, so it
            // flushes before its wait instead.
            if let Some(d) = if self.at_ready { self.session.stats_flush_due() } else { None } {
                if listening.is_some() {
                    self.session.flush_stats();
                } else if timeout.is_none_or(|t| d < t) && !self.io.wait_readable(d) {
                    self.session.flush_stats();
                    timeout = timeout.map(|t| t.saturating_sub(d));
                }
            }
            if let Some(flag) = listening {
                match self.wait_listening(&flag, timeout) {
                    Ok(true) => {}
                    Ok(false) => {
                        fatal_and_close(&mut self.io, err());
                        return End::Closed;
                    }
                    Err(_) => return End::Closed,
                }
            } else if let Some(t) = timeout {
                if t.is_zero() || !self.io.wait_readable(t) {
                    fatal_and_close(&mut self.io, err());
                    return End::Closed;
                }
            }
            let msg = match self.io.read_message() {
                Ok(Some(m)) => m,
                Ok(None) => {
                    if self.interrupts.terminate_requested() {
                        fatal_and_close(&mut self.io, PgError::admin_shutdown());
                    }
                    return End::Closed;
                }
                Err(e) => {
                    fatal_and_close(&mut self.io, e);
                    return End::Closed;
                }
            };
            if self.interrupts.terminate_requested() {
                fatal_and_close(&mut self.io, PgError::admin_shutdown());
                return End::Closed;
            }
            // A cancel that arrived while we were idle is stale.
            self.interrupts.clear_cancel();
            self.at_ready = false;
            if let Err(End::Closed) = self.dispatch(msg.0, &msg.1) {
                return End::Closed;
            }
        }
    }

    fn dispatch(&mut self, t: u8, body: &[u8]) -> Result<(), End> {
        let extended = matches!(t, b'P' | b'B' | b'E' | b'D' | b'C' | b'S' | b'H');
        if self.ignore_till_sync && t != b'S' && t != b'X' {
            return Ok(());
        }
        // Outside COPY, CopyData/CopyDone/CopyFail are ignored unparsed, as the
        // protocol says (a client may still be sending after a COPY failed).
        if matches!(t, b'd' | b'c' | b'f') {
            return Ok(());
        }
        let msg = match protocol::decode(t, body) {
            Ok(Frontend::Msg(m)) => m,
            Ok(Frontend::FunctionCall) => {
                self.session.error_reported();
                self.report(PgError::error(b"0A000", "fastpath function calls are not supported by ferrogres"))?;
                return self.ready_for_query().map_err(|_| End::Closed);
            }
            Err(e) => {
                if e.severity.ends_session() {
                    fatal_and_close(&mut self.io, e);
                    return Err(End::Closed);
                }
                // The message never reached the session, but its error fails the
                // transaction all the same (PostgreSQL: any ERROR does).
                self.session.error_reported();
                if extended && t != b'S' {
                    return self.report_extended(e);
                }
                // A malformed Sync still ends the skipping and is answered with
                // ReadyForQuery after its error (PostgreSQL marks a Sync as no
                // extended-query message before reading it).
                self.ignore_till_sync = false;
                self.report(e)?;
                return self.ready_for_query().map_err(|_| End::Closed);
            }
        };
        if let Some(ws) = self.walsender.as_mut() {
            match &msg {
                PgWireFrontendMessage::Query(q) => {
                    match ws.exec(&q.query, &mut self.io, &mut *self.session, &self.interrupts) {
                        Ok(true) => return self.ready_for_query().map_err(|_| End::Closed),
                        Ok(false) => {}
                        Err(e) => {
                            self.session.error_reported();
                            self.report(e)?;
                            return self.ready_for_query().map_err(|_| End::Closed);
                        }
                    }
                }
                PgWireFrontendMessage::Terminate(_) | PgWireFrontendMessage::Flush(_) => {}
                _ => {
                    // PostgreSQL 15's forbidden_in_wal_sender: an ERROR, then
                    // skipping to Sync; a Sync itself fails and is answered.
                    self.session.error_reported();
                    let e = PgError::error(b"08P01", "extended query protocol not supported in a replication connection");
                    if t == b'S' {
                        self.ignore_till_sync = false;
                        self.report(e)?;
                        return self.ready_for_query().map_err(|_| End::Closed);
                    }
                    return self.report_extended(e);
                }
            }
        }
        match msg {
            PgWireFrontendMessage::Query(q) => {
                let mut sink = WireSink { io: &mut self.io, in_execute: false };
                let r = self.session.execute_simple(&q.query, &mut sink);
                if let Err(e) = r {
                    self.report(e)?;
                }
                self.ready_for_query().map_err(|_| End::Closed)
            }
            PgWireFrontendMessage::Parse(p) => {
                let name = p.name.unwrap_or_default();
                match self.session.parse(&name, &p.query, &p.type_oids) {
                    Ok(()) => self.io.send_empty(b'1').map_err(|_| End::Closed),
                    Err(e) => self.report_extended(e),
                }
            }
            PgWireFrontendMessage::Bind(b) => {
                let portal = b.portal_name.unwrap_or_default();
                let stmt = b.statement_name.unwrap_or_default();
                match self.session.bind(&portal, &stmt, &b.parameter_format_codes, &b.parameters, &b.result_column_format_codes) {
                    Ok(()) => self.io.send_empty(b'2').map_err(|_| End::Closed),
                    Err(e) => self.report_extended(e),
                }
            }
            PgWireFrontendMessage::Describe(d) => {
                let name = d.name.unwrap_or_default();
                let r = if d.target_type == b'S' {
                    self.session.describe_statement(&name).and_then(|desc| {
                        self.io.send(&ParameterDescription::new(desc.param_types.clone()))?;
                        self.send_fields(desc.fields.as_deref())
                    })
                } else {
                    self.session.describe_portal(&name).and_then(|f| self.send_fields(f.as_deref()))
                };
                match r {
                    Ok(()) => Ok(()),
                    Err(e) => self.report_extended(e),
                }
            }
            PgWireFrontendMessage::Execute(x) => {
                let portal = x.name.unwrap_or_default();
                let max_rows = if x.max_rows <= 0 { 0 } else { x.max_rows as u32 };
                let mut sink = WireSink { io: &mut self.io, in_execute: true };
                match self.session.execute(&portal, max_rows, &mut sink) {
                    Ok(ExecuteOutcome::Completed(tag)) => self.io.send_command_complete(&tag),
                    Ok(ExecuteOutcome::Suspended) => self.io.send(&PortalSuspended::new()),
                    Ok(ExecuteOutcome::EmptyQuery) => self.io.send(&EmptyQueryResponse::new()),
                    Err(e) => return self.report_extended(e),
                }
                .map_err(|_| End::Closed)
            }
            PgWireFrontendMessage::Close(c) => {
                let name = c.name.unwrap_or_default();
                let r = if c.target_type == b'S' {
                    self.session.close_statement(&name)
                } else {
                    self.session.close_portal(&name)
                };
                match r {
                    Ok(()) => self.io.send(&CloseComplete::new()).map_err(|_| End::Closed),
                    Err(e) => self.report_extended(e),
                }
            }
            PgWireFrontendMessage::Sync(_) => {
                self.ignore_till_sync = false;
                if let Err(e) = self.session.sync() {
                    self.report(e)?;
                }
                self.ready_for_query().map_err(|_| End::Closed)
            }
            PgWireFrontendMessage::Flush(_) => self.io.flush().map_err(|_| End::Closed),
            PgWireFrontendMessage::Terminate(_) => {
                self.said_goodbye = true;
                Err(End::Closed)
            }
            other => {
                // decode() yields no other variant; treat one as a broken stream.
                fatal_and_close(&mut self.io, PgError::protocol_fatal(format!("unexpected frontend message {other:?}")));
                Err(End::Closed)
            }
        }
    }

    fn send_fields(&mut self, fields: Option<&[FieldInfo]>) -> Result<(), PgError> {
        match fields {
            Some(f) => self.io.send_row_description(f),
            None => self.io.send_empty(b'n'),
        }
    }
}

/// A C string on the wire: `s` up to its first NUL (as `wire_str`), then NUL.
#[inline]
fn put_cstr(b: &mut BytesMut, s: &str) {
    let bytes = s.as_bytes();
    let n = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    b.extend_from_slice(&bytes[..n]);
    b.extend_from_slice(&[0]);
}

/// Frames a message of type `t` in `out`: the type byte, the length, then
/// what `body` writes straight into the buffer (no message struct, no
/// intermediate buffer: the hot messages of a query: RowDescription,
/// DataRow, CommandComplete, ReadyForQuery, the extended protocol's
/// completions). The length is filled in afterwards; a message over the
/// protocol's limit (i32::MAX bytes) is taken back out and reported, the
/// buffer left as it was.
#[inline]
fn put_framed(out: &mut BytesMut, t: u8, body: impl FnOnce(&mut BytesMut)) -> Result<(), PgError> {
    let start = out.len();
    out.extend_from_slice(&[t, 0, 0, 0, 0]);
    body(out);
    let len = out.len() - start - 1;
    if len > i32::MAX as usize {
        out.truncate(start);
        return Err(PgError::internal(format!("could not encode message: message too large ({len} bytes)")));
    }
    out[start + 1..start + 5].copy_from_slice(&(len as i32).to_be_bytes());
    Ok(())
}

/// ReadyForQuery's transaction status indicator.
fn status_byte(status: TransactionStatus) -> u8 {
    match status {
        TransactionStatus::Idle => b'I',
        TransactionStatus::Transaction => b'T',
        TransactionStatus::Error => b'E',
    }
}

/// RowDescription's body.
fn encode_row_description(b: &mut BytesMut, fields: &[FieldInfo]) {
    b.extend_from_slice(&(fields.len() as i16).to_be_bytes());
    for f in fields {
        put_cstr(b, &f.name);
        let mut fixed = [0u8; 18];
        fixed[0..4].copy_from_slice(&f.table_oid.to_be_bytes());
        fixed[4..6].copy_from_slice(&f.column_id.to_be_bytes());
        fixed[6..10].copy_from_slice(&f.type_oid.to_be_bytes());
        fixed[10..12].copy_from_slice(&f.type_size.to_be_bytes());
        fixed[12..16].copy_from_slice(&f.type_modifier.to_be_bytes());
        fixed[16..18].copy_from_slice(&f.format.to_be_bytes());
        b.extend_from_slice(&fixed);
    }
}

/// DataRow's body: the column count, then each value's length (-1: NULL)
/// and bytes.
fn encode_data_row(b: &mut BytesMut, values: &[Option<&[u8]>]) {
    b.reserve(2 + values.iter().map(|v| 4 + v.map_or(0, |x| x.len())).sum::<usize>());
    b.extend_from_slice(&(values.len() as i16).to_be_bytes());
    for v in values {
        match v {
            Some(x) => {
                b.extend_from_slice(&(x.len() as i32).to_be_bytes());
                b.extend_from_slice(x);
            }
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
}

/// The wire layer's [`ResultSink`]: encodes straight into the output buffer.
pub(crate) struct WireSink<'a> {
    pub(crate) io: &'a mut Io,
    /// During Execute, RowDescription is not sent (Describe did that).
    pub(crate) in_execute: bool,
}

impl ResultSink for WireSink<'_> {
    fn row_description(&mut self, fields: &[FieldInfo]) -> Result<(), PgError> {
        if self.in_execute {
            return Ok(());
        }
        self.io.send_row_description(fields)
    }

    fn data_row(&mut self, values: &[Option<&[u8]>]) -> Result<(), PgError> {
        self.io.put_message(b'D', |b| encode_data_row(b, values))
    }

    fn command_complete(&mut self, tag: &str) -> Result<(), PgError> {
        self.io.send_command_complete(tag)
    }

    fn empty_query(&mut self) -> Result<(), PgError> {
        self.io.send(&EmptyQueryResponse::new())
    }

    fn notice(&mut self, notice: &PgError) -> Result<(), PgError> {
        self.io.send(&NoticeResponse::new(notice.wire_fields()))
    }

    fn copy_in_start(&mut self, format: i8, column_formats: &[i16]) -> Result<(), PgError> {
        self.io.send(&CopyInResponse::new(format, column_formats.len() as i16, column_formats.to_vec()))?;
        self.io.flush()
    }

    fn copy_in_read(&mut self) -> Result<CopyInEvent, PgError> {
        let eof = || PgError::connection_failure("unexpected EOF on client connection with an open transaction");
        loop {
            let Some(t) = self.io.read_type() else { return Err(eof()) };
            if !matches!(t, b'd' | b'c' | b'f' | b'H' | b'S') {
                // As PostgreSQL: judged by the type byte alone, the rest unread.
                self.io.sync_lost = true;
                return Err(PgError::protocol(format!("unexpected message type 0x{t:02X} during COPY from stdin")));
            }
            let (t, body) = match self.io.read_body(t) {
                Ok(Some(m)) => m,
                Ok(None) => return Err(eof()),
                Err(e) => {
                    self.io.sync_lost = true;
                    return Err(e);
                }
            };
            match t {
                b'd' => return Ok(CopyInEvent::Data(bytes::Bytes::from(body))),
                b'c' => return Ok(CopyInEvent::Done),
                b'f' => {
                    let msg = protocol::BodyReader::new(&body).cstring()?;
                    return Ok(CopyInEvent::Fail(msg));
                }
                // Flush and Sync are ignored during COPY IN (a client using the
                // extended protocol may send them right after Execute).
                _ => continue,
            }
        }
    }

    fn copy_out_start(&mut self, format: i8, column_formats: &[i16]) -> Result<(), PgError> {
        self.io.send(&CopyOutResponse::new(format, column_formats.len() as i16, column_formats.to_vec()))
    }

    fn copy_data(&mut self, data: &[u8]) -> Result<(), PgError> {
        self.io.send(&CopyData::new(bytes::Bytes::copy_from_slice(data)))
    }

    fn copy_done(&mut self) -> Result<(), PgError> {
        self.io.send(&CopyDone::new())
    }
}

#[cfg(test)]
mod tests {
    //! The hand-framed messages are byte for byte what the `pgwire` codec
    //! encodes for the same message.
    use super::*;
    use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
    use pgwire::messages::extendedquery::{BindComplete, ParseComplete};
    use pgwire::messages::response::{CommandComplete, ReadyForQuery};

    fn ours(t: u8, body: impl FnOnce(&mut BytesMut)) -> BytesMut {
        let mut b = BytesMut::from(&b"prefix"[..]);
        put_framed(&mut b, t, body).unwrap();
        b.split_off(6)
    }

    fn theirs<M: Message>(m: &M) -> BytesMut {
        let mut b = BytesMut::new();
        m.encode(&mut b).unwrap();
        b
    }

    #[test]
    fn row_description_matches_the_codec() {
        let fields = vec![
            FieldInfo { name: "aid".into(), table_oid: 16384, column_id: 1, type_oid: 23, type_size: 4, type_modifier: -1, format: 0 },
            FieldInfo { name: "ünï\u{0}cut".into(), table_oid: 0, column_id: 0, type_oid: 1043, type_size: -1, type_modifier: 14, format: 1 },
        ];
        let codec = RowDescription::new(
            fields
                .iter()
                .map(|f| {
                    FieldDescription::new(wire_str(&f.name), f.table_oid as i32, f.column_id, f.type_oid, f.type_size, f.type_modifier, f.format)
                })
                .collect(),
        );
        assert_eq!(ours(b'T', |b| encode_row_description(b, &fields)), theirs(&codec));
        assert_eq!(ours(b'T', |b| encode_row_description(b, &[])), theirs(&RowDescription::new(vec![])));
    }

    #[test]
    fn data_row_matches_the_codec() {
        let values: Vec<Option<&[u8]>> = vec![Some(b"42"), None, Some(b""), Some(&[0, 1, 2, 255])];
        let mut data = BytesMut::new();
        for v in &values {
            match v {
                Some(b) => {
                    data.put_i32(b.len() as i32);
                    data.put_slice(b);
                }
                None => data.put_i32(-1),
            }
        }
        assert_eq!(ours(b'D', |b| encode_data_row(b, &values)), theirs(&DataRow::new(data, values.len() as i16)));
        assert_eq!(ours(b'D', |b| encode_data_row(b, &[])), theirs(&DataRow::new(BytesMut::new(), 0)));
    }

    #[test]
    fn small_messages_match_the_codec() {
        assert_eq!(ours(b'C', |b| put_cstr(b, "SELECT 1")), theirs(&CommandComplete::new("SELECT 1".into())));
        assert_eq!(ours(b'C', |b| put_cstr(b, "a\u{0}b")), theirs(&CommandComplete::new("a".into())));
        assert_eq!(ours(b'1', |_| {}), theirs(&ParseComplete::new()));
        assert_eq!(ours(b'2', |_| {}), theirs(&BindComplete::new()));
        assert_eq!(ours(b'n', |_| {}), theirs(&pgwire::messages::data::NoData::new()));
        for status in [TransactionStatus::Idle, TransactionStatus::Transaction, TransactionStatus::Error] {
            assert_eq!(ours(b'Z', |b| b.extend_from_slice(&[status_byte(status)])), theirs(&ReadyForQuery::new(status)));
        }
    }
}
