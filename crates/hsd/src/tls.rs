//! Optional TLS on both ports (`--tls-cert`, `--tls-key`), with rustls. When
//! set, every connection must complete a TLS handshake before its first
//! request; the HandlerSocket protocol inside is unchanged.

use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

/// Loads and checks the certificate chain and key; called while the
/// configuration is resolved, so a bad file stops hsd before it listens.
/// Errors are one line naming the option and the file.
pub(crate) fn acceptor(cert_path: &Path, key_path: &Path) -> anyhow::Result<TlsAcceptor> {
    let (cert_name, key_name) = (cert_path.display(), key_path.display());
    let cert_pem = std::fs::read(cert_path)
        .map_err(|e| anyhow::anyhow!("cannot read --tls-cert {cert_name} ({e})"))?;
    let key_pem = std::fs::read(key_path)
        .map_err(|e| anyhow::anyhow!("cannot read --tls-key {key_name} ({e})"))?;
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
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            anyhow::anyhow!(
                "--tls-cert {cert_name} and --tls-key {key_name} do not make a pair ({e})"
            )
        })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
