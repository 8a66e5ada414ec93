//! Authentication methods: what the client sends for a password, and the
//! exchange that follows the first answer (method switches, the
//! caching_sha2_password fast and full paths).
//!
//! Whatever answers at the server's address drives this exchange, so the
//! password itself (not a scramble of it) leaves only over TLS, or
//! encrypted with an RSA key the client chose to trust: a key pinned in
//! its configuration, or one the server sends when the configuration says
//! to ask for it (`KeyPolicy`). A method switch cannot get around that:
//! mysql_clear_password over a plain link is refused, and a switch to
//! caching_sha2_password meets the same key policy.

use rsa::pkcs8::DecodePublicKey;
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// Where an authentication exchange stands after a server packet.
#[derive(Debug, PartialEq, Eq)]
pub enum AuthStep {
    /// Send this payload (the next packet of the exchange).
    Send(Vec<u8>),
    /// Wait for the next server packet.
    Wait,
    /// The server accepted the login.
    Done,
}

/// Which RSA key may encrypt the password on a plain link
/// (caching_sha2_password's full authentication).
#[derive(Clone, Default)]
pub enum KeyPolicy {
    /// None: the login fails with a message saying what to configure.
    #[default]
    Refuse,
    /// Ask the server for its key and use what it sends.
    AskServer,
    /// This key (PEM), never one the server sends.
    Pinned(String),
}

/// One login's authentication exchange.
pub struct Authenticator {
    plugin: String,
    password: Vec<u8>,
    scramble: Vec<u8>,
    /// The connection is encrypted: a password may travel in clear.
    secure: bool,
    keys: KeyPolicy,
    asked_for_key: bool,
}

impl Authenticator {
    /// An exchange that never encrypts the password with an RSA key
    /// (`with_key_policy` allows it).
    pub fn new(plugin: &str, password: &[u8], scramble: &[u8], secure: bool) -> Authenticator {
        Authenticator {
            plugin: plugin.to_string(),
            password: password.to_vec(),
            scramble: scramble.to_vec(),
            secure,
            keys: KeyPolicy::Refuse,
            asked_for_key: false,
        }
    }

    pub fn with_key_policy(mut self, keys: KeyPolicy) -> Authenticator {
        self.keys = keys;
        self
    }

    /// The method the first answer uses (the server's default, or ours when
    /// it named none).
    pub fn plugin(&self) -> &str {
        if self.plugin.is_empty() {
            "mysql_native_password"
        } else {
            &self.plugin
        }
    }

    /// The auth data of the handshake response.
    pub fn first_response(&self) -> Result<Vec<u8>, String> {
        response(self.plugin(), &self.password, &self.scramble, self.secure)
    }

    /// Handles a server packet during the login (payload without header).
    pub fn on_packet(&mut self, p: &[u8]) -> Result<AuthStep, String> {
        match p.first() {
            Some(0x00) => Ok(AuthStep::Done),
            Some(0xff) => Err(crate::result::ErrPacket::parse(p).to_string()),
            Some(0xfe) => {
                // Switch to another method with a fresh scramble.
                let rest = &p[1..];
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                self.plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
                let mut scramble = rest.get(end + 1..).unwrap_or(&[]).to_vec();
                if scramble.last() == Some(&0) {
                    scramble.pop();
                }
                self.scramble = scramble;
                Ok(AuthStep::Send(self.first_response()?))
            }
            Some(0x01) => self.more_data(&p[1..]),
            other => Err(format!("unexpected packet during login: {other:?}")),
        }
    }

    /// caching_sha2_password after the scrambled password: 3 means the
    /// server's cache knew it, 4 asks for the password itself (over TLS in
    /// clear, otherwise encrypted with the server's RSA key, which we ask
    /// for first).
    fn more_data(&mut self, data: &[u8]) -> Result<AuthStep, String> {
        if self.plugin() != "caching_sha2_password" {
            return Err(format!("unexpected extra data for {}", self.plugin()));
        }
        match data {
            [3] => Ok(AuthStep::Wait),
            [4] if self.secure => {
                let mut clear = self.password.clone();
                clear.push(0);
                Ok(AuthStep::Send(clear))
            }
            [4] => match &self.keys {
                KeyPolicy::Refuse => Err(
                    "the server asks for the password itself (caching_sha2_password full \
                     authentication) over an unencrypted connection; hsd does not send it to \
                     a key the server chooses: use TLS (ssl-mode=REQUIRED or VERIFY_CA), pin \
                     the server's RSA public key (server-public-key-path=FILE), or allow \
                     fetching it (get-server-public-key=true)"
                        .into(),
                ),
                KeyPolicy::AskServer => {
                    self.asked_for_key = true;
                    Ok(AuthStep::Send(vec![2]))
                }
                KeyPolicy::Pinned(pem) => {
                    let sealed = seal(pem.as_bytes(), &self.password, &self.scramble)
                        .map_err(|e| format!("the pinned RSA public key: {e}"))?;
                    Ok(AuthStep::Send(sealed))
                }
            },
            pem if self.asked_for_key => {
                self.asked_for_key = false;
                let sealed = seal(pem, &self.password, &self.scramble)
                    .map_err(|e| format!("the server's RSA public key: {e}"))?;
                Ok(AuthStep::Send(sealed))
            }
            _ => Err("unexpected caching_sha2_password data".to_string()),
        }
    }
}

/// The password (NUL-terminated, XORed with the scramble) encrypted with
/// an RSA public key in PEM (OAEP with SHA-1, as the server decrypts it).
fn seal(pem: &[u8], password: &[u8], scramble: &[u8]) -> Result<Vec<u8>, String> {
    let key = rsa::RsaPublicKey::from_public_key_pem(&String::from_utf8_lossy(pem))
        .map_err(|e| format!("unreadable ({e})"))?;
    let mut clear = password.to_vec();
    clear.push(0);
    for (i, b) in clear.iter_mut().enumerate() {
        *b ^= scramble[i % scramble.len().max(1)];
    }
    key.encrypt(&mut rand_core::OsRng, rsa::Oaep::new::<Sha1>(), &clear)
        .map_err(|e| format!("encrypting the password failed ({e})"))
}

/// The scrambled password a method sends first.
fn response(
    plugin: &str,
    password: &[u8],
    scramble: &[u8],
    secure: bool,
) -> Result<Vec<u8>, String> {
    match plugin {
        "mysql_native_password" => Ok(native(password, scramble)),
        "caching_sha2_password" => Ok(caching_sha2(password, scramble)),
        "mysql_clear_password" if secure => {
            let mut clear = password.to_vec();
            clear.push(0);
            Ok(clear)
        }
        "mysql_clear_password" => Err(
            "the server asks for the password in clear over an unencrypted connection; refused"
                .into(),
        ),
        other => Err(format!(
            "the account uses the authentication method {other:?}, which hsd does not speak; \
             use mysql_native_password or caching_sha2_password"
        )),
    }
}

/// SHA1(password) XOR SHA1(scramble + SHA1(SHA1(password))).
pub fn native(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha1::digest(password);
    let h2 = Sha1::digest(h1);
    let mut h = Sha1::new();
    h.update(scramble);
    h.update(h2);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

/// SHA256(password) XOR SHA256(SHA256(SHA256(password)) + scramble).
pub fn caching_sha2(password: &[u8], scramble: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha256::digest(password);
    let h2 = Sha256::digest(h1);
    let mut h = Sha256::new();
    h.update(h2);
    h.update(scramble);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_scramble_can_be_checked_like_the_server_does() {
        // The server keeps SHA1(SHA1(password)) and recovers SHA1(password).
        let scramble = b"abcdefghij0123456789";
        let out = native(b"secret", scramble);
        let stored = Sha1::digest(Sha1::digest(b"secret"));
        let mut h = Sha1::new();
        h.update(scramble);
        h.update(stored);
        let h1: Vec<u8> = out
            .iter()
            .zip(h.finalize().iter())
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(Sha1::digest(&h1).to_vec(), stored.to_vec());
        assert!(native(b"", scramble).is_empty());
    }

    #[test]
    fn sha2_scramble_can_be_checked_like_the_server_does() {
        let scramble = b"abcdefghij0123456789";
        let out = caching_sha2(b"secret", scramble);
        let stored = Sha256::digest(Sha256::digest(b"secret"));
        let mut h = Sha256::new();
        h.update(stored);
        h.update(scramble);
        let h1: Vec<u8> = out
            .iter()
            .zip(h.finalize().iter())
            .map(|(a, b)| a ^ b)
            .collect();
        assert_eq!(Sha256::digest(&h1).to_vec(), stored.to_vec());
    }

    #[test]
    fn switch_and_fast_path() {
        let mut a = Authenticator::new("mysql_native_password", b"pw", b"x", false);
        let mut switch = vec![0xfe];
        switch.extend_from_slice(b"caching_sha2_password\0");
        switch.extend_from_slice(b"01234567890123456789\0");
        match a.on_packet(&switch).unwrap() {
            AuthStep::Send(r) => assert_eq!(r, caching_sha2(b"pw", b"01234567890123456789")),
            other => panic!("{other:?}"),
        }
        assert_eq!(a.on_packet(&[1, 3]).unwrap(), AuthStep::Wait);
        assert_eq!(a.on_packet(&[0, 0, 0, 2, 0, 0, 0]).unwrap(), AuthStep::Done);
    }

    #[test]
    fn full_authentication_follows_the_key_policy() {
        let start = |keys: KeyPolicy, secure: bool| {
            Authenticator::new(
                "caching_sha2_password",
                b"pw",
                b"01234567890123456789",
                secure,
            )
            .with_key_policy(keys)
        };
        // Plain link, no key configured: refused, nothing sent.
        let e = start(KeyPolicy::Refuse, false)
            .on_packet(&[1, 4])
            .unwrap_err();
        assert!(e.contains("get-server-public-key=true"), "{e}");
        // A key offered without being asked for is not used.
        let mut a = start(KeyPolicy::Refuse, false);
        assert!(a.on_packet(b"\x01-----BEGIN PUBLIC KEY-----").is_err());
        // Over TLS the password goes as it is.
        assert_eq!(
            start(KeyPolicy::Refuse, true).on_packet(&[1, 4]).unwrap(),
            AuthStep::Send(b"pw\0".to_vec())
        );
        // Asking is allowed: request the key.
        let mut a = start(KeyPolicy::AskServer, false);
        assert_eq!(a.on_packet(&[1, 4]).unwrap(), AuthStep::Send(vec![2]));
        // A pinned key that is not a key: an error, not a clear password.
        let e = start(KeyPolicy::Pinned("junk".into()), false)
            .on_packet(&[1, 4])
            .unwrap_err();
        assert!(e.contains("pinned"), "{e}");
    }

    #[test]
    fn clear_password_needs_tls() {
        assert!(
            Authenticator::new("mysql_clear_password", b"pw", b"", false)
                .first_response()
                .is_err()
        );
        assert_eq!(
            Authenticator::new("mysql_clear_password", b"pw", b"", true)
                .first_response()
                .unwrap(),
            b"pw\0"
        );
    }
}
