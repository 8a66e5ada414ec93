//! Optional TLS on both ports (`--tls-cert`, `--tls-key`), with rustls. When
//! set, every connection must complete a TLS handshake before its first
//! request; the HandlerSocket protocol inside is unchanged. The certificate
//! and key can be replaced while hsd runs (SIGHUP, see `reload`): new
//! handshakes take the new pair, connections already made keep theirs.

use anyhow::Context;
use std::path::Path;
use std::sync::{Arc, RwLock};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// The certificate and key every handshake presents, replaceable.
#[derive(Debug)]
pub(crate) struct Rotating(RwLock<Arc<CertifiedKey>>);

impl Rotating {
    /// From now on handshakes present what `other` holds.
    pub(crate) fn take_from(&self, other: &Rotating) {
        let key = other.current();
        *self.0.write().unwrap_or_else(|p| p.into_inner()) = key;
    }

    fn current(&self) -> Arc<CertifiedKey> {
        self.0.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl ResolvesServerCert for Rotating {
    fn resolve(&self, _: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// Loads and checks the certificate chain and key; called while the
/// configuration is resolved, so a bad file stops hsd before it listens
/// (and a reload before it changes anything). Errors are one line naming
/// the option and the file. Also returns what handshakes present (to be
/// replaced by a reload) and a digest of both files as loaded.
pub(crate) fn acceptor(
    cert_path: &Path,
    key_path: &Path,
) -> anyhow::Result<(TlsAcceptor, Arc<Rotating>, String)> {
    use sha2::{Digest, Sha256};
    let (cert_name, key_name) = (cert_path.display(), key_path.display());
    let cert_pem = std::fs::read(cert_path)
        .map_err(|e| anyhow::anyhow!("cannot read --tls-cert {cert_name} ({e})"))?;
    let key_pem = std::fs::read(key_path)
        .map_err(|e| anyhow::anyhow!("cannot read --tls-key {key_name} ({e})"))?;
    let digest = format!(
        "{:x} {:x}",
        Sha256::digest(&cert_pem),
        Sha256::digest(&key_pem)
    );
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow::anyhow!("--tls-cert {cert_name} is not valid PEM ({e})"))?;
    anyhow::ensure!(
        !certs.is_empty(),
        "--tls-cert {cert_name} holds no PEM certificate (BEGIN CERTIFICATE)"
    );
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .map_err(|e| anyhow::anyhow!("--tls-key {key_name} is not valid PEM ({e})"))?
        .ok_or_else(|| anyhow::anyhow!("--tls-key {key_name} holds no PEM private key"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let certified = CertifiedKey::from_der(certs, key, &provider).map_err(|e| {
        anyhow::anyhow!("--tls-cert {cert_name} and --tls-key {key_name} do not make a pair ({e})")
    })?;
    let rotating = Arc::new(Rotating(RwLock::new(Arc::new(certified))));
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_cert_resolver(rotating.clone());
    Ok((TlsAcceptor::from(Arc::new(config)), rotating, digest))
}
