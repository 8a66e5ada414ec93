//! Optional TLS on both ports (`--tls-cert`, `--tls-key`), with rustls. When
//! set, every connection must complete a TLS handshake before its first
//! request; the HandlerSocket protocol inside is unchanged.

use anyhow::Context;
use std::path::Path;
use std::sync::Arc;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

pub fn acceptor(cert_path: &Path, key_path: &Path) -> anyhow::Result<TlsAcceptor> {
    let cert_pem = std::fs::read(cert_path)
        .with_context(|| format!("reading TLS certificate {}", cert_path.display()))?;
    let key_pem = std::fs::read(key_path)
        .with_context(|| format!("reading TLS key {}", key_path.display()))?;
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut cert_pem.as_slice())
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing TLS certificate {}", cert_path.display()))?;
    anyhow::ensure!(
        !certs.is_empty(),
        "no certificate in {}",
        cert_path.display()
    );
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut key_pem.as_slice())
        .with_context(|| format!("parsing TLS key {}", key_path.display()))?
        .with_context(|| format!("no private key in {}", key_path.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .context("TLS certificate and key do not match")?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}
