//! Starts everything `hsd serve` runs: the storage backend, the event loops
//! of both ports, the listeners, the admin endpoint; and stops it all in
//! order on a signal. Runs on the main thread, which only accepts (see the
//! thread map in `dispatch`).

use crate::accept_backoff::AcceptBackoff;
use crate::admission::{Admission, Refusal};
use crate::config::{BackendChoice, Config};
use crate::event_loop::{EventLoop, HandlerSocket, Incoming};
use crate::exec::Catalog;
use crate::limits::{ConnectionLimits, MemoryBudget};
use crate::metrics::Metrics;
use crate::port::{Port, PortKind};
use crate::read_threads::ReadThreads;
use crate::secrets::Secret;
use crate::shared::Shared;
use crate::shutdown::{self, Shutdown};
use anyhow::Context;
use hsd_mysql::MysqlBackend;
use hsd_sqlite::SqliteBackend;
use hsd_storage::{Backend, LongReads};
use std::sync::Arc;
use tokio::net::TcpListener;

/// Runs the server until a signal, then stops it; SIGHUP reloads the
/// settings (`reload`) meanwhile.
pub async fn run(config: Config, reload: crate::reload::Reload) -> anyhow::Result<()> {
    if let Some(hup) = crate::reload::listen() {
        tokio::spawn(crate::reload::on_hangup(hup, reload, config.clone()));
    }
    match config.backend.clone() {
        BackendChoice::Embedded => {
            std::fs::create_dir_all(&config.data_dir).with_context(|| {
                format!("creating data directory {}", config.data_dir.display())
            })?;
            if config.demo {
                let dir = config.data_dir.clone();
                let created =
                    tokio::task::spawn_blocking(move || crate::demo::ensure_demo(&dir)).await??;
                if created {
                    tracing::info!(
                        "created demo table test.user with {} rows",
                        crate::demo::DEMO_ROWS
                    );
                }
            }
            let backend = SqliteBackend::new(&config.data_dir, config.synchronous)
                .with_statement_timeout(config.statement_timeout)
                .with_mmap_bytes(config.sqlite_mmap_bytes);
            serve(config, backend, Metrics::new()?).await
        }
        BackendChoice::Mysql(url) => {
            if config.demo {
                anyhow::bail!("--demo works with the embedded store only");
            }
            // The topology's metrics are registered as it starts.
            let metrics = Metrics::new()?;
            let backend =
                MysqlBackend::start(config.mysql_settings(url.as_ref()), &metrics.registry).await?;
            serve(config, backend, metrics).await
        }
    }
}

async fn serve<B: Backend>(
    config: Config,
    backend: B,
    metrics: Arc<Metrics>,
) -> anyhow::Result<()> {
    let backend = Arc::new(backend);
    let read_threads = match backend.read_placement().long_reads {
        LongReads::Threads(n) => Some(Arc::new(
            ReadThreads::start(backend.clone(), n, config.max_response_bytes)
                .context("starting the scan threads")?,
        )),
        LongReads::Links(_) => None,
    };
    let shared = Shared {
        backend,
        catalog: Arc::new(Catalog::default()),
        metrics: metrics.clone(),
        max_response_bytes: config.max_response_bytes,
        walk_time: config.statement_timeout,
        read_threads: read_threads.clone(),
        write_groups: config.write_groups,
    };
    let target = shared.backend.describe_target();

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
    // Loaded and checked while the configuration was read, before listening.
    let tls = config.tls.as_ref().map(|t| t.acceptor.clone());

    let (trigger, shutdown) = shutdown::channel();
    let limits = ConnectionLimits {
        max_line: config.max_line_size,
        idle_timeout: config.idle_timeout,
        line_timeout: config.line_timeout,
        auth_timeout: config.auth_timeout,
        input_budget: Arc::new(MemoryBudget::new(config.max_input_memory)),
        output_budget: Arc::new(MemoryBudget::new(config.max_output_memory)),
    };
    let mut ports = Vec::new();
    for (listener, kind, secret, loops, name) in [
        (
            read_listener,
            PortKind::Read,
            config.secret.clone().map(Secret::into_bytes),
            config.threads,
            "hsd-read",
        ),
        (
            write_listener,
            PortKind::Write,
            config.secret_wr.clone().map(Secret::into_bytes),
            config.threads_wr,
            "hsd-write",
        ),
    ] {
        let port = Port::new(
            kind,
            secret.as_deref(),
            limits.clone(),
            tls.clone(),
            config.drain_timeout,
        );
        let mut event_loops = Vec::new();
        for i in 0..loops.max(1) {
            event_loops.push(
                EventLoop::spawn(
                    format!("{name}-{i}"),
                    HandlerSocket,
                    port.clone(),
                    shared.clone(),
                    shutdown.clone(),
                )
                .context("starting an event loop thread")?,
            );
        }
        ports.push((listener, event_loops));
    }

    let memcached = match &config.memcached {
        Some(mc) => {
            Some(crate::memcached::listen(mc, &shared, &limits, &config, shutdown.clone()).await?)
        }
        None => None,
    };

    let read_local = ports[0].0.local_addr()?;
    let write_local = ports[1].0.local_addr()?;
    // One machine-readable line on stdout: tests and scripts wait for it.
    println!(
        "hsd: listening read={read_local} write={write_local}{}{} backend={target}",
        admin
            .as_ref()
            .and_then(|a| a.local_addr().ok())
            .map(|a| format!(" admin={a}"))
            .unwrap_or_default(),
        memcached
            .as_ref()
            .map(|(l, _)| format!(
                " memcached={}",
                l.local_addr()
                    .map_or_else(|_| "?".into(), |a| a.to_string())
            ))
            .unwrap_or_default(),
    );
    if config.demo {
        println!("{}", crate::demo::usage_lines(read_local.port()));
    }
    tracing::info!(%read_local, %write_local, backend = %target, "hsd ready");
    crate::readiness::serving();

    let admission = Admission::new(config.max_connections, config.max_connections_per_address);
    let mut accepting = Vec::new();
    let mut all_loops = Vec::new();
    for ((listener, event_loops), kind) in ports.into_iter().zip([PortKind::Read, PortKind::Write])
    {
        let event_loops = Arc::new(event_loops);
        all_loops.push(event_loops.clone());
        accepting.push(tokio::spawn(accept_loop(
            listener,
            kind,
            event_loops,
            admission.clone(),
            metrics.clone(),
            shutdown.clone(),
        )));
    }
    if let Some((listener, event_loops)) = memcached {
        let event_loops = Arc::new(event_loops);
        all_loops.push(event_loops.clone());
        accepting.push(tokio::spawn(accept_loop(
            listener,
            PortKind::Memcached,
            event_loops,
            admission.clone(),
            metrics.clone(),
            shutdown.clone(),
        )));
    }
    // The admin endpoint answers through the drain (`/readyz` 503).
    let phase = Arc::new(crate::admin::Phase::default());
    let admin_task = admin.map(|l| {
        tokio::spawn(crate::admin::serve(
            l,
            metrics.clone(),
            shared.backend.clone(),
            phase.clone(),
        ))
    });

    shutdown::signal().await;
    tracing::info!("shutting down: no new connections; finishing requests in flight");
    crate::readiness::stopping();
    phase.draining();
    trigger.trigger();
    for t in accepting {
        let _ = t.await;
    }
    // The loops drain (bounded by the drain timeout) and commit; a second
    // signal ends the process at once.
    let joined = tokio::task::spawn_blocking(move || {
        for loops in all_loops {
            if let Ok(loops) = Arc::try_unwrap(loops) {
                for l in loops {
                    l.join();
                }
            }
        }
    });
    let joined = async move {
        let _ = joined.await;
        if let Some(threads) = read_threads {
            let _ = tokio::task::spawn_blocking(move || threads.shut_down()).await;
        }
    };
    let admin_task = AbortOnDrop(admin_task);
    tokio::select! {
        _ = joined => tracing::info!("shutdown complete"),
        _ = shutdown::signal() => {
            tracing::warn!("second signal: exiting at once");
            std::process::exit(1);
        }
    }
    drop(admin_task);
    Ok(())
}

/// Stops the admin endpoint's task when dropped.
struct AbortOnDrop(Option<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if let Some(t) = &self.0 {
            t.abort();
        }
    }
}

/// Accepts connections of one port and hands each to the event loop with
/// the fewest connections.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    kind: PortKind,
    event_loops: Arc<Vec<EventLoop>>,
    admission: Arc<Admission>,
    metrics: Arc<Metrics>,
    mut shutdown: Shutdown,
) {
    let mut backoff = AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.recv() => return,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                backoff
                    .failed(
                        &e,
                        if kind == PortKind::Memcached {
                            "memcached"
                        } else {
                            "HandlerSocket"
                        },
                    )
                    .await;
                continue;
            }
        };
        let place = match admission.welcome(kind, peer.ip()).await {
            Ok(place) => place,
            Err(Refusal::NoRoom) => {
                metrics.refused_connections.inc();
                tracing::debug!(%peer, "max connections reached; refusing");
                drop(stream);
                continue;
            }
            Err(Refusal::AddressFull) => {
                tracing::debug!(%peer, "max connections per address reached; refusing");
                drop(stream);
                continue;
            }
        };
        let Ok(stream) = stream.into_std() else {
            continue;
        };
        let Some(target) = event_loops.iter().min_by_key(|l| l.connections()) else {
            continue;
        };
        if target
            .hand(Incoming {
                stream,
                peer,
                place,
            })
            .is_err()
        {
            tracing::debug!(%peer, "event loop gone; dropping connection");
        }
    }
}
