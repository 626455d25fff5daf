//! TLS (`ssl = on`) with rustls: the server certificate and key, read at start
//! with PostgreSQL's checks and messages, and what `pg_stat_ssl` shows of a
//! session's encryption.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

/// The TLS configuration every SSLRequest is served with.
pub type TlsConfig = Arc<rustls::ServerConfig>;

/// An I/O error as PostgreSQL's `%m` prints it (strerror, no "(os error N)").
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Loads `cert` and `key` (paths relative to the data directory, the current
/// directory of the server) as PostgreSQL's be_tls_init does at start: the
/// `Err` is the FATAL message (with an optional DETAIL).
pub fn load(cert: &Path, key: &Path) -> Result<TlsConfig, (String, Option<String>)> {
    let certs: Vec<CertificateDer<'static>> = match std::fs::read(cert) {
        Err(e) => {
            return Err((format!("could not load server certificate file \"{}\": {}", cert.display(), strerror(&e)), None))
        }
        Ok(bytes) => CertificateDer::pem_slice_iter(&bytes).collect::<Result<_, _>>().map_err(|e| {
            (format!("could not load server certificate file \"{}\": {e}", cert.display()), None)
        })?,
    };
    if certs.is_empty() {
        return Err((format!("could not load server certificate file \"{}\": no certificate found", cert.display()), None));
    }
    // The key's ownership and mode, as PostgreSQL's check_ssl_key_file_permissions.
    let meta = std::fs::metadata(key)
        .map_err(|e| (format!("could not access private key file \"{}\": {}", key.display(), strerror(&e)), None))?;
    if !meta.is_file() {
        return Err((format!("private key file \"{}\" is not a regular file", key.display()), None));
    }
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    if meta.uid() != euid && meta.uid() != 0 {
        return Err((format!("private key file \"{}\" must be owned by the database user or root", key.display()), None));
    }
    let too_open = if meta.uid() == euid { meta.mode() & 0o077 != 0 } else { meta.mode() & 0o037 != 0 };
    if too_open {
        return Err((
            format!("private key file \"{}\" has group or world access", key.display()),
            Some("File must have permissions u=rw (0600) or less if owned by the database user, or permissions u=rw,g=r (0640) or less if owned by root.".into()),
        ));
    }
    let private = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| (format!("could not load private key file \"{}\": {e}", key.display()), None))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| (format!("could not create SSL context: {e}"), None))?
        .with_no_client_auth()
        .with_single_cert(certs, private)
        .map_err(|e| (format!("check of private key failed: {e}"), None))?;
    Ok(Arc::new(config))
}

/// What `pg_stat_ssl` shows of an encrypted session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SslInfo {
    /// "TLSv1.2" or "TLSv1.3".
    pub version: String,
    /// The cipher suite; TLS 1.3 suites under OpenSSL's names (TLS_AES_256_GCM_SHA384),
    /// TLS 1.2 suites under their IANA names.
    pub cipher: String,
    /// The symmetric key's bits.
    pub bits: i32,
}

impl SslInfo {
    pub(crate) fn of(conn: &rustls::ServerConnection) -> SslInfo {
        let version = match conn.protocol_version() {
            Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
            Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
            Some(v) => format!("{v:?}"),
            None => String::new(),
        };
        let suite = conn.negotiated_cipher_suite().map(|s| format!("{:?}", s.suite())).unwrap_or_default();
        let cipher = match suite.strip_prefix("TLS13_") {
            Some(rest) => format!("TLS_{rest}"),
            None => suite,
        };
        let bits = if cipher.contains("AES_128") { 128 } else { 256 };
        SslInfo { version, cipher, bits }
    }
}
