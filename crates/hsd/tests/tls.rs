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
