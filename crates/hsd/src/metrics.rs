//! Prometheus metrics: the registry every part of hsd registers its series
//! in, and the series of the request path. `admin` serves them on
//! `--admin-address`.

use prometheus::{
    Gauge, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};
use std::sync::Arc;

pub(crate) struct Metrics {
    pub(crate) registry: Registry,
    /// Requests by command and result (`ok` or the error reason).
    pub(crate) requests: IntCounterVec,
    /// Time from a request line being read to its response being ready.
    pub(crate) latency: Histogram,
    pub(crate) open_connections: IntGauge,
    /// Connections closed at accept for `--max-connections`.
    pub(crate) refused_connections: IntCounter,
    /// 1 when the backend could be reached at the last scrape or readiness
    /// probe, 0 when not (set by `admin`).
    pub(crate) backend_up: IntGauge,
    /// How many writes each group commit carried.
    pub(crate) group_commit_size: Histogram,
    /// Write groups rolled back after a deadlock (or a Galera certification
    /// conflict) and run again.
    pub(crate) group_reruns: IntCounter,
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
        let refused_connections = IntCounter::new(
            "refused_connections_total",
            "Connections refused because max_connections was reached",
        )?;
        let backend_up = IntGauge::new(
            "backend_up",
            "1 when the backend (the server taking writes) could be reached at this scrape, 0 when not",
        )?;
        let group_commit_size = Histogram::with_opts(
            HistogramOpts::new("group_commit_writes", "Writes per group commit").buckets(vec![
                1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
            ]),
        )?;
        let group_reruns = IntCounter::new(
            "group_commit_reruns_total",
            "Write groups rolled back after a deadlock or certification conflict and run again",
        )?;
        registry.register(Box::new(requests.clone()))?;
        registry.register(Box::new(group_reruns.clone()))?;
        registry.register(Box::new(latency.clone()))?;
        registry.register(Box::new(open_connections.clone()))?;
        registry.register(Box::new(refused_connections.clone()))?;
        registry.register(Box::new(group_commit_size.clone()))?;
        registry.register(Box::new(backend_up.clone()))?;
        // Which build runs, as 1 with its version and commit as labels.
        let build_info = IntGaugeVec::new(
            Opts::new("build_info", "The hsd build: its version and commit"),
            &["version", "commit"],
        )?;
        build_info
            .with_label_values(&[env!("CARGO_PKG_VERSION"), env!("HSD_COMMIT")])
            .set(1);
        registry.register(Box::new(build_info))?;
        let start_time = Gauge::new(
            "start_time_seconds",
            "When hsd started, in seconds since the Unix epoch",
        )?;
        start_time.set(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0.0, |d| d.as_secs_f64()),
        );
        registry.register(Box::new(start_time))?;
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
            backend_up,
            group_commit_size,
            group_reruns,
        }))
    }

    /// hsd's series, then the process's (`process_*`, not prefixed).
    pub(crate) fn render(&self) -> String {
        let mut text = TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .unwrap_or_default();
        text.push_str(&crate::process_metrics::render());
        text
    }
}
