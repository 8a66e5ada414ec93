//! TLS on both ports: a client that trusts the server's certificate speaks
//! HandlerSocket over it; a plaintext client gets nothing.

mod common;

use common::{Backend, TestServer};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio_rustls::rustls::{self, pki_types::ServerName, ClientConfig, RootCertStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_ports_speak_tls() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).unwrap();
    let s = TestServer::start(
        Backend::Sqlite,
        "test",
        &[
            "--demo",
            "--tls-cert",
            cert_path.to_str().unwrap(),
            "--tls-key",
            key_path.to_str().unwrap(),
        ],
    )
    .expect("server");

    let mut roots = RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    for (addr, request, want) in [
        (&s.read_addr, "0\t=\t1\t7\n", "0\t1\t7\n"),
        // The demo key is AUTOINCREMENT: an explicit id answers 0, as AUTO_INCREMENT does.
        (&s.write_addr, "0\t+\t1\t100001\n", "0\t1\t0\n"),
    ] {
        let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let tls = connector.connect(name, tcp).await.expect("TLS handshake");
        let mut tls = BufReader::new(tls);
        tls.write_all(b"P\t0\ttest\tuser\tPRIMARY\tuser_id\n")
            .await
            .unwrap();
        tls.write_all(request.as_bytes()).await.unwrap();
        tls.flush().await.unwrap();
        let mut line = String::new();
        tls.read_line(&mut line).await.unwrap();
        assert_eq!(line, "0\t1\n");
        line.clear();
        tls.read_line(&mut line).await.unwrap();
        assert_eq!(line, want);
    }

    // Plaintext on a TLS port: no HandlerSocket answer, the connection ends.
    let mut plain = tokio::net::TcpStream::connect(&s.read_addr).await.unwrap();
    plain
        .write_all(b"P\t0\ttest\tuser\tPRIMARY\tuser_id\n")
        .await
        .unwrap();
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(15), plain.read_to_end(&mut buf)).await;
    assert!(
        !buf.starts_with(b"0\t1"),
        "plaintext must not be served: {buf:?}"
    );
}

/// A TLS client that trusts only `cert`. Without resumption: a resumed
/// session presents no certificate.
fn trusting(cert: &rcgen::CertifiedKey) -> tokio_rustls::TlsConnector {
    let mut roots = RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.resumption = rustls::client::Resumption::disabled();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

type TlsLine = BufReader<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// A handshake with `addr` as `connector`'s client.
async fn handshake(connector: &tokio_rustls::TlsConnector, addr: &str) -> std::io::Result<TlsLine> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").unwrap();
    Ok(BufReader::new(connector.connect(name, tcp).await?))
}

/// A request on a TLS connection and its answer line.
async fn ask(tls: &mut TlsLine) -> String {
    tls.write_all(b"P\t0\tnodb\tt\tPRIMARY\tk\n").await.unwrap();
    tls.flush().await.unwrap();
    let mut line = String::new();
    tls.read_line(&mut line).await.unwrap();
    line
}

/// SIGHUP with new certificate and key files: new connections get the new
/// certificate, a connection made before keeps working on the old one,
/// and files that do not make a pair change nothing. Before, SIGHUP ended
/// hsd; a certificate could only be rotated by a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_rotates_the_certificate_under_a_connected_client() {
    let dir = tempfile::tempdir().unwrap();
    let old = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let new = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    let install = |c: &rcgen::CertifiedKey| {
        std::fs::write(&cert_path, c.cert.pem()).unwrap();
        std::fs::write(&key_path, c.key_pair.serialize_pem()).unwrap();
    };
    install(&old);
    let config = dir.path().join("hsd.toml");
    std::fs::write(
        &config,
        format!(
            "address = \"127.0.0.1\"\nport = 0\nport-wr = 0\ndata-dir = \"{}\"\ntls-cert = \"{}\"\ntls-key = \"{}\"\n",
            dir.path().join("data").display(),
            cert_path.display(),
            key_path.display()
        ),
    )
    .unwrap();
    let config_arg = config.display().to_string();
    let hsd = hs_conformance::launcher::start(
        common::hsd_bin(),
        &["serve", "--config", &config_arg],
        &[],
    )
    .unwrap();
    let hup = || unsafe {
        // SAFETY: kill(2) on our own child's pid.
        libc::kill(hsd.pid() as i32, libc::SIGHUP);
    };
    let (trusts_old, trusts_new) = (trusting(&old), trusting(&new));
    let mut before = handshake(&trusts_old, &hsd.read)
        .await
        .expect("old certificate");
    assert_eq!(ask(&mut before).await, "1\t1\topen_table\n");
    assert!(handshake(&trusts_new, &hsd.read).await.is_err());

    install(&new);
    hup();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let mut after = loop {
        if let Ok(c) = handshake(&trusts_new, &hsd.write).await {
            break c;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the new certificate was not served"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(ask(&mut after).await, "1\t1\topen_table\n");
    // Both ports present it; the old one is gone for new connections.
    assert!(handshake(&trusts_new, &hsd.read).await.is_ok());
    assert!(handshake(&trusts_old, &hsd.read).await.is_err());
    // The connection made before goes on.
    assert_eq!(ask(&mut before).await, "1\t1\topen_table\n");

    // A key that is not the certificate's: nothing changes.
    std::fs::write(&key_path, old.key_pair.serialize_pem()).unwrap();
    hup();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(handshake(&trusts_new, &hsd.read).await.is_ok());
    assert_eq!(ask(&mut before).await, "1\t1\topen_table\n");
}
