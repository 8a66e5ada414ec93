//! The memcached front: the memcached text protocol over the same tables,
//! executor and loops as HandlerSocket, configured as MySQL's InnoDB
//! memcached plugin was (docs/memcached.md).
//!
//! - `config`: `--memcached-address`, the `[memcached]` table of the config
//!   file, and the containers read from `innodb_memcache` at start;
//! - `connection`: framing (mc-proto's `TextDecoder`), with the port's
//!   budgets and timeouts;
//! - `binary`: the binary protocol's commands, run by the same session;
//! - `gets`: pipelined plain gets read as one batch;
//! - `sasl`: `--memcached-sasl-user`'s login and a connection's PLAIN
//!   authentication on the binary protocol;
//! - `sasl_guard`: failed logins counted, logged and bounded by address;
//! - `session`: one command at a time, turned into the executor's finds
//!   and writes (`ops`) and answered in memcached's words;
//! - `ops`: what get, store, delete, arithmetic and touch do to a row;
//! - `flush`: `flush_all` by the containers' `flush_policy`;
//! - `policy`: where get, set and delete go by the containers' cache
//!   policies (`innodb_only`, `caching`, `cache_only`, `disabled`);
//! - `memory`: the items of `cache_only` containers, bounded, LRU;
//! - `fit`: which keys and values a container's columns keep as given;
//! - `item`: a row read back as a memcached item (value, flags, cas, expiry);
//! - `answer`: the `exec::Answer` the executor fills for this front;
//! - `sweep`: the bounded background deletion of expired rows;
//! - `stats`: the `stats` groups that apply to tables.

mod answer;
mod binary;
mod config;
mod counters;
mod door;
mod fit;
mod flush;
mod gets;
mod item;
mod memory;
mod ops;
mod policy;
mod sasl;
mod sasl_guard;
mod session;
mod stats;
mod sweep;

pub(crate) use answer::McAnswer;
pub(crate) use config::{
    load_containers, Containers, FileSettings, MemcachedConfig, MemcachedOptions,
};
pub(crate) use sasl::SaslLogin;

use crate::admission::Place;
use crate::connection::{self, Close};
use crate::dispatch::Dispatcher;
use crate::event_loop::Front;
use crate::port::Port;
use crate::shutdown::Shutdown;
use hsd_storage::Backend;
use std::rc::Rc;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// What `version` (and the binary Version, and `stats`' `version`)
/// answers: the memcached release whose protocol the door answers as
/// (tested byte for byte against 1.6.18), then hsd's own version. Clients
/// read the leading number to pick protocol features (memcapable, for
/// one, expects a 1.6 server's answers only from a version of 1.6 or
/// later).
pub(crate) const VERSION: &str = concat!("1.6.18-hsd-", env!("CARGO_PKG_VERSION"));

/// The memcached front of one event loop.
pub(crate) struct Memcached {
    pub(crate) containers: Arc<Containers>,
    pub(crate) max_item_size: usize,
    /// `--max-response-bytes`: what one get's answer may hold.
    pub(crate) max_answer: usize,
    /// Source of the values written to cas columns (see `item::CasClock`).
    pub(crate) clock: Arc<item::CasClock>,
    /// Turns for read-modify-writes of one key, shared by every loop.
    pub(crate) locks: Arc<ops::KeyLocks>,
    /// The flush_all waiting for its delay, shared by every loop.
    pub(crate) flushes: Arc<flush::FlushSchedule>,
    /// The items of `cache_only` containers, shared by every loop.
    pub(crate) memory: Arc<memory::MemoryItems>,
    /// What `stats` reports (start time, `stats settings`).
    pub(crate) stats: Arc<stats::StatsContext>,
    /// What clients must authenticate with (None: no SASL).
    pub(crate) sasl: Option<Arc<SaslLogin>>,
    /// Failed logins by address, shared by every loop (None: not bounded
    /// across connections, as in unit tests).
    pub(crate) sasl_guard: Option<Arc<sasl_guard::SaslGuard>>,
    /// The sweep of expired rows, run by this loop's copy (only one loop's
    /// copy has it).
    sweep: Option<config::SweepSettings>,
}

impl Memcached {
    pub(crate) fn new(
        containers: Arc<Containers>,
        max_item_size: usize,
        max_answer: usize,
        sasl: Option<SaslLogin>,
        sweep: Option<config::SweepSettings>,
        stats_settings: Vec<(&'static str, String)>,
        memory_limit: usize,
    ) -> Memcached {
        let stats = stats::StatsContext {
            started: item::now(),
            containers: containers.list.len(),
            settings: stats_settings,
            counters: counters::McCounters::new(),
        };
        Memcached {
            containers,
            max_item_size,
            max_answer,
            clock: Arc::new(item::CasClock::new()),
            locks: Arc::new(ops::KeyLocks::new()),
            flushes: Arc::default(),
            memory: Arc::new(memory::MemoryItems::new(memory_limit)),
            stats: Arc::new(stats),
            sasl: sasl.map(Arc::new),
            sasl_guard: None,
            sweep,
        }
    }

    /// Another loop's copy: the same containers and cas clock; the sweep
    /// only if `sweeps`.
    pub(crate) fn share(&self, sweeps: bool) -> Memcached {
        Memcached {
            containers: self.containers.clone(),
            max_item_size: self.max_item_size,
            max_answer: self.max_answer,
            clock: self.clock.clone(),
            locks: self.locks.clone(),
            flushes: self.flushes.clone(),
            memory: self.memory.clone(),
            stats: self.stats.clone(),
            sasl: self.sasl.clone(),
            sasl_guard: self.sasl_guard.clone(),
            sweep: self.sweep.filter(|_| sweeps),
        }
    }
}

impl<B: Backend> Front<B> for Memcached {
    type Answer = McAnswer;

    async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
        &self,
        stream: S,
        peer: std::net::SocketAddr,
        port: &Rc<Port>,
        dispatcher: Rc<Dispatcher<B, McAnswer>>,
        place: Place,
        shutdown: Shutdown,
    ) -> Close {
        let session = session::McSession::new(self, dispatcher, peer.ip());
        let door = door::McDoor::new(session, self.max_item_size);
        connection::serve(stream, door, port.limits.clone(), place, shutdown).await
    }

    async fn beside(&self, dispatcher: Rc<Dispatcher<B, McAnswer>>, shutdown: Shutdown) {
        if let Some(settings) = self.sweep {
            sweep::run(settings, self.containers.clone(), dispatcher, shutdown).await;
        }
    }
}

/// The containers `listen` serves, read from the config file or the
/// plugin's `innodb_memcache` tables and judged, and the MiB the
/// `cache_only` policies may hold: `hsd check` reads them the same way,
/// so both refuse in the same words.
pub(crate) async fn read_containers<B: Backend>(
    settings: &MemcachedConfig,
    backend: &B,
    catalog: &crate::exec::Catalog,
    row_cache: bool,
) -> anyhow::Result<(Containers, u64)> {
    let containers = load_containers(backend, catalog, &settings.file, row_cache).await?;
    let memory_mib = settings
        .file
        .cache_only_mib
        .unwrap_or(memory::DEFAULT_CACHE_ONLY_MIB);
    anyhow::ensure!(
        (1..=1 << 20).contains(&memory_mib),
        "[memcached] cache_only_mib must be 1 to 1048576, not {memory_mib}"
    );
    Ok((containers, memory_mib))
}

/// Reads the containers, listens on `--memcached-address` and starts the
/// memcached event loops (`hsd-mc-N`, as many as `--threads`); the caller
/// accepts on the listener (`server::accept_loop`).
pub(crate) async fn listen<B: Backend>(
    settings: &MemcachedConfig,
    shared: &crate::shared::Shared<B>,
    limits: &crate::limits::ConnectionLimits,
    config: &crate::config::Config,
    shutdown: Shutdown,
) -> anyhow::Result<(tokio::net::TcpListener, Vec<crate::event_loop::EventLoop>)> {
    use anyhow::Context;
    let (containers, memory_mib) = read_containers(
        settings,
        &*shared.backend,
        &shared.catalog,
        config.row_cache.is_some(),
    )
    .await?;
    for container in &containers.list {
        let p = container.policies;
        tracing::info!(
            container = %String::from_utf8_lossy(&container.name),
            get_policy = p.get.name(),
            set_policy = p.set.name(),
            delete_policy = p.delete.name(),
            flush_policy = container.flush.describe(),
            "memcached container policies"
        );
    }
    tracing::info!(
        containers = containers.list.len(),
        sasl = settings.sasl.is_some(),
        sweep = %settings.sweep.as_ref().map_or_else(
            || "off".to_string(),
            |s| format!("every {}s, at most {} rows", s.interval.as_secs(), s.limit)
        ),
        default = %String::from_utf8_lossy(&containers.list[containers.default].name),
        "memcached containers"
    );
    let listener = tokio::net::TcpListener::bind(&settings.address)
        .await
        .with_context(|| format!("listening on {} (--memcached-address)", settings.address))?;
    let address = listener
        .local_addr()
        .map_or_else(|_| settings.address.clone(), |a| a.to_string());
    let stats_settings = stats::Settings {
        address: &address,
        max_connections: config.max_connections,
        threads: config.threads.max(1),
        max_item_size: settings.max_item_size,
        idle_timeout: config.idle_timeout.map_or(0, |t| t.as_secs()),
        sasl: settings.sasl.is_some(),
        tls: config.tls.is_some(),
        flush: flush::enabled(&containers),
        evicts: containers
            .list
            .iter()
            .any(|c| c.policies.set == policy::CachePolicy::CacheOnly),
    }
    .lines();
    let mut front = Memcached::new(
        Arc::new(containers),
        settings.max_item_size,
        shared.max_response_bytes,
        settings.sasl.clone(),
        settings.sweep,
        stats_settings,
        (memory_mib as usize) << 20,
    );
    front
        .stats
        .counters
        .register(&shared.metrics.registry)
        .context("the memcached counters")?;
    if front.sasl.is_some() {
        let guard = sasl_guard::SaslGuard::new().context("the SASL counters")?;
        guard
            .register(&shared.metrics.registry)
            .context("registering the SASL counters")?;
        front.sasl_guard = Some(Arc::new(guard));
    }
    let port = Port::new(
        crate::port::PortKind::Memcached,
        None,
        limits.clone(),
        config.tls.as_ref().map(|t| t.acceptor.clone()),
        config.drain_timeout,
    );
    let mut loops = Vec::new();
    for i in 0..config.threads.max(1) {
        loops.push(
            crate::event_loop::EventLoop::spawn(
                format!("hsd-mc-{i}"),
                // One loop sweeps expired rows.
                front.share(i == 0),
                port.clone(),
                shared.clone(),
                shutdown.clone(),
            )
            .context("starting a memcached event loop thread")?,
        );
    }
    Ok((listener, loops))
}
