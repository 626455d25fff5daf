//! A client socket: TCP or Unix-domain, blocking; a TCP socket becomes TLS after
//! an SSLRequest answered 'S'.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// A TLS session over TCP. Shared by the connection's reader and writer halves,
/// which the connection's one thread uses in turn (never at once).
pub type TlsStream = Arc<Mutex<rustls::StreamOwned<rustls::ServerConnection, TcpStream>>>;

#[derive(Debug)]
pub enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(TlsStream),
}

fn lock(s: &TlsStream) -> MutexGuard<'_, rustls::StreamOwned<rustls::ServerConnection, TcpStream>> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

impl Stream {
    pub fn try_clone(&self) -> io::Result<Stream> {
        Ok(match self {
            Stream::Tcp(s) => Stream::Tcp(s.try_clone()?),
            Stream::Unix(s) => Stream::Unix(s.try_clone()?),
            Stream::Tls(s) => Stream::Tls(s.clone()),
        })
    }
    pub fn shutdown(&self, how: Shutdown) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(how),
            Stream::Unix(s) => s.shutdown(how),
            Stream::Tls(s) => lock(s).sock.shutdown(how),
        }
    }
    pub fn set_read_timeout(&self, d: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.set_read_timeout(d),
            Stream::Unix(s) => s.set_read_timeout(d),
            Stream::Tls(s) => lock(s).sock.set_read_timeout(d),
        }
    }
    /// "127.0.0.1:5000" or "[local]", as PostgreSQL logs a client.
    pub fn peer_description(&self) -> String {
        match self {
            Stream::Tcp(s) => s.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into()),
            Stream::Tls(s) => lock(s).sock.peer_addr().map(|a| a.to_string()).unwrap_or_else(|_| "?".into()),
            Stream::Unix(_) => "[local]".into(),
        }
    }
    /// The socket's file descriptor (for the idle-client probe).
    pub fn raw_fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Tcp(s) => s.as_raw_fd(),
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tls(s) => lock(s).sock.as_raw_fd(),
        }
    }
    /// The TCP peer's address; `None` for a Unix socket.
    pub fn peer_ip(&self) -> Option<std::net::IpAddr> {
        match self {
            Stream::Tcp(s) => s.peer_addr().ok().map(|a| a.ip()),
            Stream::Tls(s) => lock(s).sock.peer_addr().ok().map(|a| a.ip()),
            Stream::Unix(_) => None,
        }
    }
    /// The session's encryption, `None` when in clear.
    pub fn ssl_info(&self) -> Option<crate::tls::SslInfo> {
        match self {
            Stream::Tls(s) => Some(crate::tls::SslInfo::of(&lock(s).conn)),
            _ => None,
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s) => s.read(buf),
            Stream::Tls(s) => lock(s).read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s) => s.write(buf),
            Stream::Tls(s) => lock(s).write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s) => s.flush(),
            Stream::Tls(s) => lock(s).flush(),
        }
    }
}
