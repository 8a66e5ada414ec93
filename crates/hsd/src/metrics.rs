//! Prometheus metrics, and the tiny HTTP endpoint that serves them on
//! `--admin-address`. The endpoint answers every request with the text
//! exposition; it is for scrapers on a trusted network, like the admin port
//! of most servers. It serves at most `MAX_ADMIN_CONNECTIONS` connections at
//! once, each for at most 10 seconds.

use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry, TextEncoder,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

pub(crate) struct Metrics {
    pub(crate) registry: Registry,
    /// Requests by command and result (`ok` or the error reason).
    pub(crate) requests: IntCounterVec,
    /// Time from a request line being read to its response being ready.
    pub(crate) latency: Histogram,
    pub(crate) open_connections: IntGauge,
    pub(crate) refused_connections: IntGauge,
    /// How many writes each group commit carried.
    pub(crate) group_commit_size: Histogram,
    /// Hot counters resolved once: label lookups hash strings.
    pub(crate) find_ok: IntCounter,
    pub(crate) find_error: IntCounter,
    pub(crate) write_ok: IntCounter,
    pub(crate) write_error: IntCounter,
}

impl Metrics {
    pub(crate) fn new() -> anyhow::Result<Arc<Metrics>> {
        let registry = Registry::new_custom(Some("hsd".into()), None)?;
        let requests = IntCounterVec::new(
            Opts::new("requests_total", "Requests by command and result"),
            &["command", "result"],
        )?;
        let latency = Histogram::with_opts(
            HistogramOpts::new("request_duration_seconds", "Request latency inside hsd").buckets(
                vec![
                    0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01,
                    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                ],
            ),
        )?;
        let open_connections = IntGauge::new("open_connections", "Client connections open now")?;
        let refused_connections = IntGauge::new(
            "refused_connections_total",
            "Connections refused because max_connections was reached",
        )?;
        let group_commit_size = Histogram::with_opts(
            HistogramOpts::new("group_commit_writes", "Writes per group commit").buckets(vec![
                1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
            ]),
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(open_connections.clone()))?;
        registry.register(Box::new(refused_connections.clone()))?;
        registry.register(Box::new(group_commit_size.clone()))?;
        Ok(Arc::new(Metrics {
            find_ok: requests.with_label_values(&["find", "ok"]),
            find_error: requests.with_label_values(&["find", "error"]),
            write_ok: requests.with_label_values(&["write", "ok"]),
            write_error: requests.with_label_values(&["write", "error"]),
            registry,
            requests,
            latency,
            open_connections,
            refused_connections,
            group_commit_size,
        }))
    }

    pub(crate) fn render(&self) -> String {
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_default()
    }
}

/// Admin connections served at once; more are closed as soon as they are
/// accepted. A scraper or a health check needs one or two: the bound keeps
/// a client that opens connections and never finishes a request from
/// holding tasks, sockets and rendered bodies without end on the thread
/// that also accepts the HandlerSocket ports.
pub(crate) const MAX_ADMIN_CONNECTIONS: usize = 16;

/// How long one admin connection may take, from accept to its last byte
/// written: a client that does not send its request or read the answer is
/// closed then.
const ADMIN_CONNECTION_TIME: Duration = Duration::from_secs(10);

/// How long the request head may take to arrive before it is answered
/// anyway.
const ADMIN_REQUEST_WAIT: Duration = Duration::from_secs(5);

/// Serves `GET /metrics` (any path, really) until the task is dropped, to
/// at most `MAX_ADMIN_CONNECTIONS` connections at once.
pub(crate) async fn serve_admin(listener: TcpListener, metrics: Arc<Metrics>) {
    let mut backoff = crate::accept_backoff::AcceptBackoff::default();
    let places = Arc::new(Semaphore::new(MAX_ADMIN_CONNECTIONS));
    loop {
        let (sock, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                backoff.failed(&e, "admin").await;
                continue;
            }
        };
        let Ok(place) = places.clone().try_acquire_owned() else {
            tracing::debug!(%peer, "admin connection closed: {MAX_ADMIN_CONNECTIONS} already open");
            drop(sock);
            continue;
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let _place = place;
            let _ = tokio::time::timeout(ADMIN_CONNECTION_TIME, answer(sock, &metrics)).await;
        });
    }
}

/// Reads the request head (its content does not matter) and answers with
/// the metrics.
async fn answer(mut sock: TcpStream, metrics: &Metrics) {
    let mut buf = [0u8; 4096];
    let _ = tokio::time::timeout(ADMIN_REQUEST_WAIT, sock.read(&mut buf)).await;
    let body = metrics.render();
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = sock.write_all(head.as_bytes()).await;
    let _ = sock.write_all(body.as_bytes()).await;
    let _ = sock.shutdown().await;
}
