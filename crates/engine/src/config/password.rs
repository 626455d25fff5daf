//! Passwords: the verifiers stored in `pg_authid.rolpassword`, in PostgreSQL's
//! formats, and the server side of the password exchanges.
//!
//! Like [`super::hba`], this lives in the engine's configuration module so that
//! the SQL layer (which makes verifiers at CREATE / ALTER ROLE ... PASSWORD) and
//! the wire server (which checks them at connection) share one implementation.
//! All cryptography comes from well-kept crates: SHA-256, HMAC and PBKDF2 from
//! `ring`, MD5 from `md-5`, random salts and nonces from `ring`'s system RNG.
//!
//! Stored formats (PostgreSQL 15's):
//! - SCRAM-SHA-256 (RFC 5802 / 7677): `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`,
//!   the last three in base64; 4096 iterations and a 16-byte random salt;
//!   SaltedPassword = PBKDF2-HMAC-SHA-256(password, salt, i), ClientKey =
//!   HMAC(SaltedPassword, "Client Key"), StoredKey = SHA-256(ClientKey),
//!   ServerKey = HMAC(SaltedPassword, "Server Key").
//! - MD5: `md5` followed by the hex MD5 of password || user name (35 characters).
//!
//! A password given to CREATE / ALTER ROLE that already has one of these forms
//! is stored as it is ([`encrypt`]), as PostgreSQL does.
//!
//! The SCRAM exchange ([`ScramServer`]) follows PostgreSQL's auth-scram.c in
//! behaviour: the user name in the client's first message is ignored (the
//! startup packet's is used); a role without a usable SCRAM verifier (missing,
//! no password, MD5 only) still goes through the whole exchange with a mock
//! verifier derived from the user name, and fails only at the proof, so a
//! client cannot learn which roles exist. Channel binding
//! (`SCRAM-SHA-256-PLUS`) is not offered; a client asking for it (`p=`) is
//! refused. Passwords are not SASLprep-normalized: ASCII passwords (whose
//! SASLprep form is themselves) work as in PostgreSQL; a non-ASCII password
//! is hashed as its UTF-8 bytes.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use ring::{digest, hmac, pbkdf2, rand::SecureRandom};
use std::num::NonZeroU32;

/// PostgreSQL's SCRAM_DEFAULT_ITERATIONS.
pub const SCRAM_ITERATIONS: u32 = 4096;
/// PostgreSQL's SCRAM_DEFAULT_SALT_LEN.
const SCRAM_SALT_LEN: usize = 16;
/// PostgreSQL's SCRAM_RAW_NONCE_LEN.
const SCRAM_NONCE_LEN: usize = 18;
const KEY_LEN: usize = 32;

/// `password_encryption`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encryption {
    Md5,
    ScramSha256,
}

impl Encryption {
    pub fn from_setting(s: &str) -> Encryption {
        if s.eq_ignore_ascii_case("md5") {
            Encryption::Md5
        } else {
            Encryption::ScramSha256
        }
    }
}

/// What a stored password is (PostgreSQL's PasswordType).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PasswordType {
    Plaintext,
    Md5,
    ScramSha256,
}

/// The form of `stored`.
pub fn password_type(stored: &str) -> PasswordType {
    if stored.len() == 35 && stored.starts_with("md5") && stored[3..].bytes().all(|b| b.is_ascii_hexdigit()) {
        PasswordType::Md5
    } else if parse_scram(stored).is_some() {
        PasswordType::ScramSha256
    } else {
        PasswordType::Plaintext
    }
}

/// MD5 of `data` as 32 lower-case hex digits (the md-5 crate).
pub fn md5_hex(data: &[u8]) -> String {
    use md5::Digest;
    md5::Md5::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

/// `md5` || md5(password || user).
pub fn md5_verifier(password: &str, user: &str) -> String {
    format!("md5{}", md5_hex(format!("{password}{user}").as_bytes()))
}

fn random_bytes(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    // The system RNG failing is not something to go on from.
    ring::rand::SystemRandom::new().fill(&mut b).expect("system random number generator failed");
    b
}

fn hmac_sha256(key: &[u8], data: &[u8]) -> [u8; KEY_LEN] {
    let k = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut out = [0u8; KEY_LEN];
    out.copy_from_slice(hmac::sign(&k, data).as_ref());
    out
}

fn sha256(data: &[u8]) -> [u8; KEY_LEN] {
    let mut out = [0u8; KEY_LEN];
    out.copy_from_slice(digest::digest(&digest::SHA256, data).as_ref());
    out
}

/// SaltedPassword, then (StoredKey, ServerKey).
fn scram_keys(password: &str, salt: &[u8], iterations: u32) -> ([u8; KEY_LEN], [u8; KEY_LEN]) {
    let mut salted = [0u8; KEY_LEN];
    let iters = NonZeroU32::new(iterations.max(1)).unwrap_or(NonZeroU32::MIN);
    pbkdf2::derive(pbkdf2::PBKDF2_HMAC_SHA256, iters, salt, password.as_bytes(), &mut salted);
    let client_key = hmac_sha256(&salted, b"Client Key");
    (sha256(&client_key), hmac_sha256(&salted, b"Server Key"))
}

fn format_scram(iterations: u32, salt: &[u8], stored: &[u8], server: &[u8]) -> String {
    format!("SCRAM-SHA-256${iterations}:{}${}:{}", B64.encode(salt), B64.encode(stored), B64.encode(server))
}

/// A new SCRAM-SHA-256 verifier for `password`, with a random salt.
pub fn scram_verifier(password: &str) -> String {
    let salt = random_bytes(SCRAM_SALT_LEN);
    let (stored, server) = scram_keys(password, &salt, SCRAM_ITERATIONS);
    format_scram(SCRAM_ITERATIONS, &salt, &stored, &server)
}

/// A parsed SCRAM-SHA-256 verifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScramVerifier {
    pub iterations: u32,
    pub salt: Vec<u8>,
    pub stored_key: [u8; KEY_LEN],
    pub server_key: [u8; KEY_LEN],
}

/// `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`, or None.
pub fn parse_scram(s: &str) -> Option<ScramVerifier> {
    let rest = s.strip_prefix("SCRAM-SHA-256$")?;
    let (iter_salt, keys) = rest.split_once('$')?;
    let (iters, salt) = iter_salt.split_once(':')?;
    let (stored, server) = keys.split_once(':')?;
    let iterations: u32 = iters.parse().ok().filter(|i| *i > 0)?;
    let salt = B64.decode(salt).ok()?;
    let key = |k: &str| -> Option<[u8; KEY_LEN]> { B64.decode(k).ok()?.try_into().ok() };
    Some(ScramVerifier { iterations, salt, stored_key: key(stored)?, server_key: key(server)? })
}

/// What CREATE / ALTER ROLE ... PASSWORD stores: a password already in a
/// verifier's form as it is, else its verifier by `password_encryption`.
pub fn encrypt(password: &str, user: &str, how: Encryption) -> String {
    match password_type(password) {
        PasswordType::Md5 | PasswordType::ScramSha256 => password.to_string(),
        PasswordType::Plaintext => match how {
            Encryption::Md5 => md5_verifier(password, user),
            Encryption::ScramSha256 => scram_verifier(password),
        },
    }
}

/// Constant-time equality.
fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The `password` method: `given` (clear text from the client) against the
/// stored verifier of `user`.
pub fn plaintext_matches(stored: &str, user: &str, given: &str) -> bool {
    match password_type(stored) {
        PasswordType::Md5 => ct_eq(md5_verifier(given, user).as_bytes(), stored.as_bytes()),
        PasswordType::ScramSha256 => match parse_scram(stored) {
            Some(v) => {
                let (stored_key, server_key) = scram_keys(given, &v.salt, v.iterations);
                ct_eq(&stored_key, &v.stored_key) && ct_eq(&server_key, &v.server_key)
            }
            None => false,
        },
        // PostgreSQL never stores clear text since 10; refuse rather than compare.
        PasswordType::Plaintext => false,
    }
}

/// The `md5` method: the client's answer (`md5` || md5(md5(password || user) || salt))
/// against an MD5 verifier.
pub fn md5_response_matches(stored: &str, salt: [u8; 4], response: &str) -> bool {
    if password_type(stored) != PasswordType::Md5 {
        return false;
    }
    let mut data = stored.as_bytes()[3..].to_vec();
    data.extend_from_slice(&salt);
    ct_eq(format!("md5{}", md5_hex(&data)).as_bytes(), response.as_bytes())
}

/// Four random bytes for an MD5 challenge.
pub fn md5_salt() -> [u8; 4] {
    let b = random_bytes(4);
    [b[0], b[1], b[2], b[3]]
}

/// A malformed or refused SCRAM message: PostgreSQL's 08P01 "malformed SCRAM
/// message" (or the message given) with this detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScramError {
    pub message: String,
    pub detail: Option<String>,
}

fn malformed(detail: impl Into<String>) -> ScramError {
    ScramError { message: "malformed SCRAM message".into(), detail: Some(detail.into()) }
}

/// The server side of one SCRAM-SHA-256 exchange.
pub struct ScramServer {
    verifier: ScramVerifier,
    /// False when the verifier is a mock: the exchange goes on and then fails.
    real: bool,
    /// The gs2 header the client sent ("n,," or "y,,").
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

/// How an exchange ended.
#[derive(Debug, PartialEq, Eq)]
pub enum ScramOutcome {
    /// The proof was right: send this as AuthenticationSASLFinal.
    Success(Vec<u8>),
    /// The proof was wrong (or the verifier a mock): 28P01.
    Failure,
}

impl ScramServer {
    /// `stored`: the role's rolpassword, if it has a SCRAM verifier; otherwise
    /// a mock one is made from `user` (the exchange then fails at the proof).
    pub fn new(stored: Option<&str>, user: &str) -> ScramServer {
        match stored.and_then(parse_scram) {
            Some(verifier) => ScramServer::with(verifier, true),
            None => {
                // A salt that depends only on the user name, so that repeated
                // attempts see the same one, as for a real role.
                let salt = sha256(format!("ferrogres mock salt {user}").as_bytes())[..SCRAM_SALT_LEN].to_vec();
                let verifier = ScramVerifier {
                    iterations: SCRAM_ITERATIONS,
                    salt,
                    stored_key: sha256(&random_bytes(KEY_LEN)),
                    server_key: sha256(&random_bytes(KEY_LEN)),
                };
                ScramServer::with(verifier, false)
            }
        }
    }

    fn with(verifier: ScramVerifier, real: bool) -> ScramServer {
        ScramServer { verifier, real, gs2_header: String::new(), client_first_bare: String::new(), server_first: String::new(), nonce: String::new() }
    }

    /// client-first-message (the SASLInitialResponse's data) -> server-first-message.
    pub fn client_first(&mut self, data: &[u8]) -> Result<Vec<u8>, ScramError> {
        let msg = std::str::from_utf8(data).map_err(|_| malformed("Message is not valid UTF-8."))?;
        let mut it = msg.splitn(3, ',');
        let cbind = it.next().unwrap_or("");
        match cbind.chars().next() {
            Some('n') | Some('y') if cbind.len() == 1 => {}
            Some('p') => {
                return Err(ScramError {
                    message: "channel binding is not supported by this build".into(),
                    detail: None,
                })
            }
            Some(c) => return Err(malformed(format!("Unexpected channel-binding flag \"{c}\"."))),
            None => return Err(malformed("Comma expected, but found end of string.")),
        }
        let authzid = it.next().ok_or_else(|| malformed("Comma expected, but found end of string."))?;
        if !authzid.is_empty() {
            return Err(ScramError { message: "client uses authorization identity, but it is not supported".into(), detail: None });
        }
        let bare = it.next().ok_or_else(|| malformed("Comma expected, but found end of string."))?;
        if bare.starts_with("m=") {
            return Err(ScramError { message: "client requires an unsupported SCRAM extension".into(), detail: None });
        }
        // n=<user name (ignored)>,r=<client nonce>[,extensions]
        let mut attrs = bare.split(',');
        if !attrs.next().is_some_and(|a| a.starts_with("n=")) {
            return Err(malformed("Expected attribute \"n\" but found end of string."));
        }
        let client_nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or_else(|| malformed("Expected attribute \"r\" but found end of string."))?;
        if client_nonce.is_empty() || !client_nonce.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',') {
            return Err(malformed("Client nonce contains invalid characters."));
        }
        self.gs2_header = format!("{cbind},,");
        self.client_first_bare = bare.to_string();
        self.nonce = format!("{client_nonce}{}", B64.encode(random_bytes(SCRAM_NONCE_LEN)));
        self.server_first = format!("r={},s={},i={}", self.nonce, B64.encode(&self.verifier.salt), self.verifier.iterations);
        Ok(self.server_first.clone().into_bytes())
    }

    /// client-final-message -> the outcome.
    pub fn client_final(&mut self, data: &[u8]) -> Result<ScramOutcome, ScramError> {
        if self.server_first.is_empty() {
            return Err(malformed("Client final message before client first message."));
        }
        let msg = std::str::from_utf8(data).map_err(|_| malformed("Message is not valid UTF-8."))?;
        let (without_proof, proof) = msg.rsplit_once(",p=").ok_or_else(|| malformed("Expected attribute \"p\" but found end of string."))?;
        let mut attrs = without_proof.split(',');
        let cbind = attrs
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or_else(|| malformed("Expected attribute \"c\" but found end of string."))?;
        let cbind = B64.decode(cbind).map_err(|_| malformed("Channel binding data is not valid base64."))?;
        if cbind != self.gs2_header.as_bytes() {
            return Err(ScramError { message: "SCRAM channel binding check failed".into(), detail: None });
        }
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or_else(|| malformed("Expected attribute \"r\" but found end of string."))?;
        if nonce != self.nonce {
            return Err(malformed("Nonce does not match."));
        }
        let proof = B64.decode(proof).map_err(|_| malformed("Malformed proof in client-final-message."))?;
        if proof.len() != KEY_LEN {
            return Err(malformed("Malformed proof in client-final-message."));
        }
        let auth_message = format!("{},{},{}", self.client_first_bare, self.server_first, without_proof);
        let signature = hmac_sha256(&self.verifier.stored_key, auth_message.as_bytes());
        let client_key: Vec<u8> = proof.iter().zip(signature.iter()).map(|(p, s)| p ^ s).collect();
        if !self.real || !ct_eq(&sha256(&client_key), &self.verifier.stored_key) {
            return Ok(ScramOutcome::Failure);
        }
        let server_signature = hmac_sha256(&self.verifier.server_key, auth_message.as_bytes());
        Ok(ScramOutcome::Success(format!("v={}", B64.encode(server_signature)).into_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The client side of RFC 5802, for the tests only.
    fn client_proof(password: &str, client_first_bare: &str, server_first: &str, final_without_proof: &str) -> (String, String) {
        let attr = |k: &str| server_first.split(',').find_map(|a| a.strip_prefix(k)).unwrap().to_string();
        let salt = B64.decode(attr("s=")).unwrap();
        let iters: u32 = attr("i=").parse().unwrap();
        let mut salted = [0u8; KEY_LEN];
        pbkdf2::derive(pbkdf2::PBKDF2_HMAC_SHA256, NonZeroU32::new(iters).unwrap(), &salt, password.as_bytes(), &mut salted);
        let client_key = hmac_sha256(&salted, b"Client Key");
        let auth = format!("{client_first_bare},{server_first},{final_without_proof}");
        let sig = hmac_sha256(&sha256(&client_key), auth.as_bytes());
        let proof: Vec<u8> = client_key.iter().zip(sig.iter()).map(|(a, b)| a ^ b).collect();
        let server_sig = hmac_sha256(&hmac_sha256(&salted, b"Server Key"), auth.as_bytes());
        (B64.encode(proof), format!("v={}", B64.encode(server_sig)))
    }

    fn exchange(stored: Option<&str>, password: &str) -> ScramOutcome {
        let mut s = ScramServer::new(stored, "alice");
        let bare = "n=,r=rOprNGfwEbeRWgbNEkqO";
        let sf = String::from_utf8(s.client_first(format!("n,,{bare}").as_bytes()).unwrap()).unwrap();
        let nonce = sf.split(',').next().unwrap().strip_prefix("r=").unwrap().to_string();
        let without = format!("c=biws,r={nonce}");
        let (proof, expect_final) = client_proof(password, bare, &sf, &without);
        let out = s.client_final(format!("{without},p={proof}").as_bytes()).unwrap();
        if let ScramOutcome::Success(f) = &out {
            assert_eq!(f, expect_final.as_bytes());
        }
        out
    }

    #[test]
    fn md5_verifier_is_postgresqls() {
        // SELECT 'md5' || md5('secret' || 'alice') in PostgreSQL.
        assert_eq!(md5_verifier("secret", "alice"), format!("md5{}", md5_hex(b"secretalice")));
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(password_type(&md5_verifier("x", "y")), PasswordType::Md5);
    }

    #[test]
    fn scram_verifier_round_trips_and_checks() {
        let v = scram_verifier("pencil");
        assert!(v.starts_with("SCRAM-SHA-256$4096:"));
        assert_eq!(password_type(&v), PasswordType::ScramSha256);
        assert!(plaintext_matches(&v, "u", "pencil"));
        assert!(!plaintext_matches(&v, "u", "pencil2"));
        assert_eq!(encrypt(&v, "u", Encryption::Md5), v, "a verifier is stored as is");
        assert!(matches!(exchange(Some(&v), "pencil"), ScramOutcome::Success(_)));
        assert_eq!(exchange(Some(&v), "wrong"), ScramOutcome::Failure);
        assert_eq!(exchange(None, "pencil"), ScramOutcome::Failure);
        assert_eq!(exchange(Some(&md5_verifier("pencil", "alice")), "pencil"), ScramOutcome::Failure);
    }

    #[test]
    fn rfc7677_test_vector() {
        // RFC 7677 section 3: user "user", password "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096.
        let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
        let (stored, server) = scram_keys("pencil", &salt, 4096);
        let bare = "n=user,r=rOprNGfwEbeRWgbNEkqO";
        let sf = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
        let without = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
        let auth = format!("{bare},{sf},{without}");
        let server_sig = hmac_sha256(&server, auth.as_bytes());
        assert_eq!(B64.encode(server_sig), "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
        let sig = hmac_sha256(&stored, auth.as_bytes());
        let proof = B64.decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=").unwrap();
        let ck: Vec<u8> = proof.iter().zip(sig.iter()).map(|(a, b)| a ^ b).collect();
        assert_eq!(sha256(&ck), stored);
    }

    #[test]
    fn md5_challenge() {
        let stored = md5_verifier("pw", "bob");
        let salt = [1, 2, 3, 4];
        let mut d = stored.as_bytes()[3..].to_vec();
        d.extend_from_slice(&salt);
        let good = format!("md5{}", md5_hex(&d));
        assert!(md5_response_matches(&stored, salt, &good));
        assert!(!md5_response_matches(&stored, [0, 2, 3, 4], &good));
    }

    #[test]
    fn malformed_messages_are_refused() {
        let mut s = ScramServer::new(None, "x");
        assert!(s.client_final(b"c=biws,r=x,p=AAAA").is_err());
        for bad in [&b""[..], b"n", b"x,,n=,r=a", b"n,a=b,n=,r=x", b"n,,r=x", b"n,,n=", b"n,,n=,r=", b"\xff\xfe"] {
            assert!(ScramServer::new(None, "x").client_first(bad).is_err(), "{bad:?}");
        }
        let mut s = ScramServer::new(None, "x");
        s.client_first(b"n,,n=,r=abc").unwrap();
        assert!(s.client_final(b"c=biws,r=abcWRONG,p=AAAA").is_err());
        assert!(s.client_final(b"garbage").is_err());
    }
}
