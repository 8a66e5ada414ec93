//! Starts everything `hsd serve` runs: storage workers, the read and write
//! listeners, the admin endpoint; and stops it all in order on a signal.

use crate::backend::sqlite::SqliteBackend;
use crate::backend::Backend;
use crate::config::Config;
use crate::connection::{self, ConnectionLimits};
use crate::exec::Catalog;
use crate::metrics::{self, Metrics};
use crate::secrets::Secret;
use crate::session::{ListenerContext, PortKind, Session};
use crate::shutdown::{self, Shutdown};
use crate::workers::Workers;
use anyhow::Context;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, Semaphore};
use tokio_rustls::TlsAcceptor;

/// How long a client may take to complete its TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long shutdown waits for connections to finish what they read.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

pub fn make_backend(config: &Config) -> anyhow::Result<Arc<dyn Backend>> {
    if config.backend == "sqlite" || config.backend.starts_with("sqlite:") {
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("creating data directory {}", config.data_dir.display()))?;
        return Ok(Arc::new(SqliteBackend::new(
            &config.data_dir,
            config.synchronous,
        )));
    }
    if config.backend.starts_with("mysql://") {
        return crate::backend::mysql::MysqlBackend::from_config(config)
            .map(|b| Arc::new(b) as Arc<dyn Backend>);
    }
    anyhow::bail!(
        "unknown backend {:?}: use sqlite or mysql://user:password@host:port",
        redact(&config.backend)
    )
}

/// Read worker threads, each with its own storage connection. For MySQL
/// they mostly wait on the network, so their number is the read connection
/// pool's size, `--mysql-pool` (default `--threads`).
pub fn read_threads(config: &Config) -> usize {
    if config.backend.starts_with("mysql://") {
        config.mysql_pool.unwrap_or(config.threads).max(1)
    } else {
        config.threads
    }
}

/// A backend URL with any password replaced, for messages and logs.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            match creds.find(':') {
                Some(c) => format!("{}{}:***{}", &url[..s + 3], &creds[..c], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    }
}

pub async fn run(config: Config) -> anyhow::Result<()> {
    let backend = make_backend(&config)?;
    if config.demo {
        if !config.backend.starts_with("sqlite") {
            anyhow::bail!("--demo works with the embedded store only");
        }
        let dir = config.data_dir.clone();
        let created = tokio::task::spawn_blocking(move || crate::demo::ensure_demo(&dir)).await??;
        if created {
            tracing::info!(
                "created demo table test.user with {} rows",
                crate::demo::DEMO_ROWS
            );
        }
    }
    let metrics = Metrics::new()?;
    let catalog = Arc::new(Catalog::default());
    let workers = Workers::start(
        backend.clone(),
        catalog,
        metrics.clone(),
        read_threads(&config),
        config.threads_wr,
    )
    .context("starting worker threads")?;

    let read_addr = format!("{}:{}", config.address, config.port);
    let write_addr = format!("{}:{}", config.address, config.port_wr);
    let read_listener = TcpListener::bind(&read_addr)
        .await
        .with_context(|| format!("listening on {read_addr}"))?;
    let write_listener = TcpListener::bind(&write_addr)
        .await
        .with_context(|| format!("listening on {write_addr}"))?;
    let admin = match &config.admin_address {
        Some(a) => Some(
            TcpListener::bind(a)
                .await
                .with_context(|| format!("listening on {a}"))?,
        ),
        None => None,
    };
    let read_local = read_listener.local_addr()?;
    let write_local = write_listener.local_addr()?;
    // One machine-readable line on stdout: tests and scripts wait for it.
    println!(
        "hsd: listening read={read_local} write={write_local}{} backend={}",
        admin
            .as_ref()
            .and_then(|a| a.local_addr().ok())
            .map(|a| format!(" admin={a}"))
            .unwrap_or_default(),
        backend.describe_target()
    );
    if config.demo {
        println!("{}", crate::demo::usage_lines(read_local.port()));
    }
    tracing::info!(%read_local, %write_local, backend = %backend.describe_target(), "hsd ready");

    let tls = config.tls.as_ref().map(|t| t.acceptor.clone());
    let (trigger, shutdown) = shutdown::channel();
    // Every connection task holds a clone; recv() returns None once all are gone.
    let (done_tx, mut done_rx) = mpsc::channel::<()>(1);
    let slots = Arc::new(Semaphore::new(config.max_connections));
    let limits = ConnectionLimits {
        max_line: config.max_line_size,
        idle_timeout: config.idle_timeout,
    };
    let contexts = [
        (
            read_listener,
            PortKind::Read,
            config.secret.clone().map(Secret::into_bytes),
        ),
        (
            write_listener,
            PortKind::Write,
            config.secret_wr.clone().map(Secret::into_bytes),
        ),
    ];
    let mut accept_tasks = Vec::new();
    for (listener, kind, secret) in contexts {
        let ctx = Arc::new(ListenerContext {
            kind,
            secret,
            reads: workers.reads.clone(),
            writes: workers.writes.clone(),
            metrics: metrics.clone(),
            inline_reads: backend.reads_inline().then(|| backend.clone()),
        });
        accept_tasks.push(tokio::spawn(accept_loop(
            listener,
            ctx,
            tls.clone(),
            limits,
            slots.clone(),
            shutdown.clone(),
            done_tx.clone(),
        )));
    }
    let admin_task = admin.map(|l| tokio::spawn(metrics::serve_admin(l, metrics.clone())));

    shutdown::signal().await;
    tracing::info!("shutting down: no new connections; finishing requests in flight");
    trigger.trigger();
    for t in accept_tasks {
        let _ = t.await;
    }
    drop(done_tx);
    if tokio::time::timeout(DRAIN_TIMEOUT, done_rx.recv())
        .await
        .is_err()
    {
        tracing::warn!("connections still busy after {DRAIN_TIMEOUT:?}; closing anyway");
    }
    if let Some(t) = admin_task {
        t.abort();
    }
    tokio::task::spawn_blocking(move || workers.shutdown()).await?;
    tracing::info!("shutdown complete");
    Ok(())
}

async fn accept_loop(
    listener: TcpListener,
    ctx: Arc<ListenerContext>,
    tls: Option<TlsAcceptor>,
    limits: ConnectionLimits,
    slots: Arc<Semaphore>,
    mut shutdown: Shutdown,
    done: mpsc::Sender<()>,
) {
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.recv() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of file descriptors and the like: back off, keep serving.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            ctx.metrics.refused_connections.inc();
            tracing::debug!(%peer, "max connections reached; refusing");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (ctx, shutdown, done, tls) = (ctx.clone(), shutdown.clone(), done.clone(), tls.clone());
        tokio::spawn(async move {
            ctx.metrics.open_connections.inc();
            let session = Session::new(ctx.clone());
            let why = match tls {
                None => connection::serve(stream, session, limits, shutdown).await,
                Some(acceptor) => {
                    match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
                    {
                        Ok(Ok(tls_stream)) => {
                            connection::serve(tls_stream, session, limits, shutdown).await
                        }
                        _ => {
                            tracing::debug!(%peer, "TLS handshake failed");
                            connection::Close::Io
                        }
                    }
                }
            };
            tracing::debug!(%peer, ?why, "connection closed");
            ctx.metrics.open_connections.dec();
            drop(permit);
            drop(done);
        });
    }
}
