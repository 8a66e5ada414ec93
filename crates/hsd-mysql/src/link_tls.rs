//! TLS for the link to the MySQL/MariaDB server (`ssl-mode`, `ssl-ca` in
//! the --backend URL), with rustls.
//!
//! The modes mean what they mean to MySQL's own clients: PREFERRED and
//! REQUIRED encrypt without checking who answers (they keep the link from
//! being read, not from being answered by an impostor); VERIFY_CA checks
//! that the server's certificate is signed by `ssl-ca`; VERIFY_IDENTITY
//! also that it names the URL's host. The files are read once, at start,
//! so a bad one stops hsd before it listens.

use mysql_wire::{MysqlUrl, SslMode};
use std::sync::Arc;
use tokio_rustls::rustls::client::danger::{
    HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier,
};
use tokio_rustls::rustls::client::WebPkiServerVerifier;
use tokio_rustls::rustls::crypto::{
    verify_tls12_signature, verify_tls13_signature, CryptoProvider,
};
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use tokio_rustls::rustls::{
    self, CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};

/// What the link does about TLS, resolved from the URL at start.
#[derive(Clone)]
pub(super) struct TlsSetup {
    pub(crate) mode: SslMode,
    /// The rustls configuration; None for DISABLED.
    pub(crate) config: Option<Arc<ClientConfig>>,
    /// The name the certificate must carry (VERIFY_IDENTITY), or the
    /// host for the handshake's SNI.
    pub(crate) server_name: ServerName<'static>,
}

impl TlsSetup {
    pub(super) fn new(url: &MysqlUrl) -> Result<TlsSetup, String> {
        let mode = url.options.ssl_mode;
        let server_name = ServerName::try_from(url.host.clone())
            .map_err(|e| format!("the host {:?} is not a name TLS can check ({e})", url.host))?;
        if url.options.socket.is_some() && !matches!(mode, SslMode::Disabled | SslMode::Preferred) {
            return Err(format!(
                "ssl-mode={mode} with socket=: a Unix socket is local and hsd does not \
                 encrypt it; drop one of the two"
            ));
        }
        if mode == SslMode::Disabled || url.options.socket.is_some() {
            return Ok(TlsSetup {
                mode: SslMode::Disabled,
                config: None,
                server_name,
            });
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier: Arc<dyn ServerCertVerifier> = if mode.verifies() {
            let path = url
                .options
                .ssl_ca
                .as_deref()
                .ok_or("ssl-mode=VERIFY_CA and VERIFY_IDENTITY need ssl-ca=FILE")?;
            let pem =
                std::fs::read(path).map_err(|e| format!("cannot read ssl-ca {path} ({e})"))?;
            let mut roots = RootCertStore::empty();
            let mut n = 0;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| format!("ssl-ca {path} is not valid PEM ({e})"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("ssl-ca {path}: a certificate is unusable ({e})"))?;
                n += 1;
            }
            if n == 0 {
                return Err(format!(
                    "ssl-ca {path} holds no PEM certificate (BEGIN CERTIFICATE)"
                ));
            }
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| format!("ssl-ca {path}: {e}"))?;
            Arc::new(Verify {
                webpki,
                check_name: mode == SslMode::VerifyIdentity,
            })
        } else {
            Arc::new(NoVerify(provider.clone()))
        };
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| format!("TLS protocol versions: {e}"))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(TlsSetup {
            mode,
            config: Some(Arc::new(config)),
            server_name,
        })
    }
}

/// VERIFY_CA / VERIFY_IDENTITY: the chain must lead to `ssl-ca`; the name
/// is checked only for VERIFY_IDENTITY.
#[derive(Debug)]
struct Verify {
    webpki: Arc<WebPkiServerVerifier>,
    check_name: bool,
}

impl ServerCertVerifier for Verify {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            // The chain was checked before the name: only the name is wrong.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
}

/// PREFERRED / REQUIRED: any certificate (the handshake's signatures are
/// still checked, so the session keys belong to whoever holds the key).
#[derive(Debug)]
struct NoVerify(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
