//! MySQL/MariaDB backend: serves the tables of an existing server
//! (`--backend mysql://user:password@host:port`).
//!
//! Each event loop owns its `MysqlConn`s, each one server connection
//! (`link::Link`) driven by the loop itself. Every `P` re-reads the table's
//! metadata; finds read the server's current rows, unless the row cache
//! (`--row-cache-mib`, `cache`) may answer them.
//!
//! - `connector`: makes server connections; fails fast while the server is down.
//! - `link`: one server connection: pipelined statements, answers read in
//!   place; `link_login`: its login and session settings.
//! - `conn`: the storage connection (`MysqlConn`): its link, its transaction
//!   and the retry rules; `conn_writes`: a group's inserts and updates, merged
//!   and pipelined.
//! - `errors`: the server's error numbers as clients see them.
//! - `meta`: describe a table (information_schema, SHOW INDEX).
//! - `scan`: `scan_many`: routes each scan to grouped lookups (`points`),
//!   `HANDLER` reads (`handler`) or SELECTs; `rows` is a result row as the
//!   executor sees it; `fill`: the row cache's reads, locking and not
//!   waiting.
//! - `literal`: values as SQL literals; `batch_sql`: a group's merged writes.
//! - `in_doubt`: a COMMIT whose answer never came, resolved from another
//!   connection before its writes are answered.
//! - `binlog`: the binary log reader (a replica's stream of row changes),
//!   the row cache's source of evictions; `cache`: the row cache on this
//!   backend (its feed, when reads may use it, its metrics).
//! - `preflight`: what `hsd check` looks at on the servers, and the words
//!   for the problems a start meets.
//! - `topology`: with `--replica`, which server takes writes and where the
//!   read port's finds may run (see docs/replication.md).
//!
//! Faults: a connection that breaks is dropped and made again on next use. A
//! read that failed because the server closed the connection (restart,
//! wait_timeout) before any row came back is retried once on a new
//! connection, so a restart of the server costs clients no error once it is
//! back. While the server is unreachable, one caller at a time probes it and
//! the others fail at once (`StorageError::Unavailable`, `1 1 2013`).
//!
//! Writes: `begin` only marks the group; the session runs groups with
//! autocommit off, so the transaction begins with the group's first
//! statement and ends with `COMMIT`: no round trip to open it, and no
//! transaction (or metadata lock) is ever held idle. A group's inserts leave
//! as multi-row INSERTs and its other statements pipelined (`insert_rows`,
//! `write_rows`). A deadlock, or losing the connection
//! inside the group, dooms the group: its remaining writes and the commit
//! fail, so no write is reported done that the server rolled back.

mod batch_sql;
pub mod binlog;
pub mod cache;
mod conn;
mod conn_writes;
mod connector;
mod errors;
mod fill;
mod gtid_tracking;
mod handler;
mod in_doubt;
mod link;
mod link_login;
mod link_tls;
mod literal;
mod meta;
mod points;
pub mod preflight;
mod rows;
mod scan;
pub(crate) mod topology;

pub(crate) use self::cache::ReadConsistency;
use self::cache::{CacheSettings, CacheSource, MustSee, RowCacheService};
pub(crate) use self::conn::MysqlConn;
use self::conn::Placement;
use self::connector::Connector;
use self::link::Replicated;
pub use self::topology::ReadFrom;
use self::topology::{ServerSpec, Topology, TopologySettings, WriterPositions};
use hsd_storage::finding::Severity;
use hsd_storage::row_cache::CachedConn;
use hsd_storage::{Backend, LongReads, ReadPlacement, ReadRouter, ReadSide, Route, StorageError};
use mysql_wire::MysqlUrl;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Settings the backend needs from the configuration.
#[derive(Debug, Clone)]
pub struct MysqlSettings {
    pub url: MysqlUrl,
    /// Shown in logs instead of the URL (no password).
    pub target: String,
    pub timeout: Duration,
    /// Read connections per event loop (per server, with replicas).
    pub links_per_loop: usize,
    /// `--replica`: the --backend server's replicas (or its Galera peers),
    /// each with its name for logs. With any, a `topology` decides which
    /// server takes writes and where the read port's finds run.
    pub replicas: Vec<(MysqlUrl, String)>,
    /// `--read-from`.
    pub read_from: ReadFrom,
    /// `--topology-interval`.
    pub topology_interval: Duration,
    /// `--replica-wait`.
    pub replica_wait: Duration,
    /// `--row-cache-mib` (more than 0) and `--read-consistency`.
    pub row_cache: Option<CacheSettings>,
    /// `--read-consistency`, for reads on replicas.
    pub read_consistency: ReadConsistency,
}

pub struct MysqlBackend {
    /// The --backend server's (the only one without replicas).
    connector: Arc<Connector>,
    links_per_loop: usize,
    servers: Option<Servers>,
    cache: Option<Arc<RowCacheService>>,
}

/// Several servers: the topology and a connector per server.
struct Servers {
    topology: Arc<Topology>,
    /// Per server: connections that write or read plainly (and report the
    /// GTID of each commit).
    plain: Arc<[Arc<Connector>]>,
    /// Per server: connections for causal reads on a Galera node.
    causal: Vec<Arc<Connector>>,
    /// With `--read-consistency strict`: asks the writer's position.
    strict: Option<Arc<WriterPositions>>,
}

impl MysqlBackend {
    /// Checks the account at start: a wrong password or URL is a
    /// configuration error; an unreachable server is not (hsd starts and
    /// connects once it is up). With replicas, starts the topology (whose
    /// metrics go to `registry`) and waits for its first look at every
    /// server.
    pub async fn start(
        settings: MysqlSettings,
        registry: &prometheus::Registry,
    ) -> anyhow::Result<MysqlBackend> {
        let links_per_loop = settings.links_per_loop.max(1);
        let mut all = vec![(settings.url.clone(), settings.target.clone())];
        all.extend(settings.replicas.iter().cloned());
        let mut bases = Vec::with_capacity(all.len());
        // The first login asks for GTID tracking as the links that write
        // will (with replicas or the row cache), so that a server whose
        // tracker is off is said at start, in `hsd check`'s words.
        let tracked = Replicated {
            track_gtids: !settings.replicas.is_empty() || settings.row_cache.is_some(),
            causal_reads: false,
        };
        for (i, (url, target)) in all.iter().enumerate() {
            let what = if i == 0 { "--backend" } else { "--replica" };
            let base = preflight::link_settings(url, settings.timeout, target)
                .map_err(|f| anyhow::anyhow!(f.text))?;
            match preflight::login(&base.with_replicated(tracked), target, what).await {
                Ok(link) if link.server.is_vitess() && !settings.replicas.is_empty() => {
                    link.quit().await;
                    anyhow::bail!(preflight::VITESS_NO_REPLICAS);
                }
                Ok(link) if link.server.is_vitess() && settings.row_cache.is_some() => {
                    link.quit().await;
                    anyhow::bail!(preflight::VITESS_NO_ROW_CACHE);
                }
                Ok(link) => {
                    connector::announce(&link, &base);
                    link.quit().await
                }
                Err(f) if f.severity == Severity::Error => anyhow::bail!(f.text),
                Err(f) => tracing::warn!("{}", f.text),
            }
            bases.push(base);
        }
        if settings.replicas.is_empty() {
            let cache = match settings.row_cache {
                Some(c) => Some(
                    RowCacheService::start(
                        c,
                        CacheSource::Single(Box::new(bases[0].clone())),
                        registry,
                    )
                    .await?,
                ),
                None => None,
            };
            // With the cache, each commit's GTID comes back with it
            // (`cache::AckedWrites`).
            let base = bases.remove(0).with_replicated(Replicated {
                track_gtids: cache.is_some(),
                causal_reads: false,
            });
            return Ok(MysqlBackend {
                connector: Arc::new(Connector::new(base, settings.target)),
                links_per_loop,
                servers: None,
                cache,
            });
        }
        let connectors = |replicated: Replicated| -> Vec<Arc<Connector>> {
            bases
                .iter()
                .zip(&all)
                .map(|(base, (_, target))| {
                    Arc::new(Connector::new(
                        base.with_replicated(replicated),
                        target.clone(),
                    ))
                })
                .collect()
        };
        let plain = connectors(Replicated {
            track_gtids: true,
            causal_reads: false,
        });
        let causal = connectors(Replicated {
            track_gtids: false,
            causal_reads: true,
        });
        let topology = Topology::start(
            TopologySettings {
                servers: all
                    .iter()
                    .zip(&bases)
                    .map(|((url, _), link)| ServerSpec {
                        name: url.endpoint(),
                        link: link.clone(),
                    })
                    .collect(),
                read_from: settings.read_from,
                interval: settings.topology_interval,
                replica_wait: settings.replica_wait,
                timeout: settings.timeout,
            },
            registry,
        )
        .await?;
        let strict = (settings.read_consistency == ReadConsistency::Strict)
            .then(|| WriterPositions::start(topology.clone()));
        if settings.row_cache.is_some() && (0..all.len()).any(|i| topology.is_galera(i)) {
            topology.shut_down();
            anyhow::bail!(preflight::GALERA_NO_ROW_CACHE);
        }
        let cache = match settings.row_cache {
            Some(c) => {
                let source = CacheSource::Topology(topology.clone());
                match RowCacheService::start(c, source, registry).await {
                    Ok(cache) => Some(cache),
                    Err(e) => {
                        topology.shut_down();
                        return Err(e);
                    }
                }
            }
            None => None,
        };
        Ok(MysqlBackend {
            connector: plain[0].clone(),
            links_per_loop,
            servers: Some(Servers {
                topology,
                plain: plain.into(),
                causal,
                strict,
            }),
            cache,
        })
    }
}

impl MysqlBackend {
    /// A connection to the one server, or one that follows the primary.
    /// The server connection itself is made on first use.
    fn primary_conn(&self) -> MysqlConn {
        let acked = self.cache.as_ref().map(|c| c.acked.clone());
        let conn = match &self.servers {
            None => MysqlConn::new(self.connector.clone(), Placement::Single),
            Some(s) => {
                let at = s.topology.read_primary();
                MysqlConn::new(
                    s.plain[at].clone(),
                    Placement::Writer {
                        topology: s.topology.clone(),
                        servers: s.plain.clone(),
                        at,
                    },
                )
            }
        };
        conn.noting_in(acked)
    }
}

impl Drop for MysqlBackend {
    fn drop(&mut self) {
        if let Some(s) = &self.servers {
            s.topology.shut_down();
        }
    }
}

impl Backend for MysqlBackend {
    type Storage = CachedConn<MysqlConn>;
    type Router = MysqlReads;

    /// With replicas, a connection that follows the server taking writes.
    /// With the row cache, its writes are counted (reads that must see
    /// them wait for the cache to have seen them too).
    async fn connect(&self) -> Result<CachedConn<MysqlConn>, StorageError> {
        let cache = self.cache.as_ref().map(|c| c.cache.clone());
        Ok(CachedConn::counting(self.primary_conn(), cache))
    }

    /// The read port's finds go where the topology says with `--read-from
    /// replicas`; every other find runs on the connection that follows
    /// the writer.
    fn read_router(&self, side: ReadSide) -> Arc<MysqlReads> {
        let replicas = match &self.servers {
            Some(s) if side == ReadSide::Reads && s.topology.read_from() == ReadFrom::Replicas => {
                Some(Replicas {
                    topology: s.topology.clone(),
                    strict: s.strict.clone(),
                })
            }
            _ => None,
        };
        Arc::new(match (&self.cache, replicas) {
            (Some(cache), elsewhere) => MysqlReads::Cached(cache.clone(), elsewhere),
            (None, Some(r)) => MysqlReads::Routed(r),
            (None, None) => MysqlReads::Writer,
        })
    }

    /// Routed: a connection to server `place`; to a Galera node, one that
    /// reads causally (it serves reads the routing sent to a peer of the
    /// writer). The row cache's place: a connection that answers from it
    /// and fills it from the server (with replicas, from the primary, which
    /// the cache's binlog reader follows: a locking read on a replica
    /// orders nothing against the primary's writers).
    async fn connect_at(
        &self,
        router: &MysqlReads,
        place: usize,
    ) -> Result<CachedConn<MysqlConn>, StorageError> {
        if let MysqlReads::Cached(c, _) = router {
            if place == router.cache_place() {
                return Ok(CachedConn::new(self.primary_conn(), c.cache.clone()));
            }
        }
        let (Some(_), Some(s)) = (router.replicas(), &self.servers) else {
            return self.connect().await;
        };
        let Some(plain) = s.plain.get(place) else {
            return Err(StorageError::Unavailable(format!("no server {place}")));
        };
        let causal = s.topology.is_galera(place);
        let connector = if causal { &s.causal[place] } else { plain };
        Ok(CachedConn::counting(
            MysqlConn::new(connector.clone(), Placement::Fixed { causal }),
            None,
        ))
    }

    fn describe_target(&self) -> String {
        self.connector.target.clone()
    }

    fn text_rules(&self) -> hsd_storage::TextRules {
        hsd_storage::TextRules::Charsets
    }

    /// With replicas, the topology's word (it looks at every server each
    /// `--topology-interval`): whether a server takes writes. With one
    /// server, the connector's last attempt while recent, else a login.
    fn reachable(&self) -> hsd_storage::Reachability<'_> {
        Box::pin(async move {
            match &self.servers {
                Some(s) => s
                    .topology
                    .writer()
                    .map(|_| ())
                    .map_err(|e| connector::why(&e)),
                None => self.connector.reachable().await,
            }
        })
    }

    /// Lookups on `--mysql-pool` links per loop, grouped; long scans on one
    /// more link per loop, a client batch at a time.
    fn read_placement(&self) -> ReadPlacement {
        ReadPlacement {
            links: self.links_per_loop,
            long_reads: LongReads::Links(1),
        }
    }
}

/// Where a batcher's finds run: on the connection that follows the
/// writer, on the servers of the topology (numbered as configured), as it
/// routes them (with `--read-consistency strict`, on one that has what the
/// writer had when they arrived), or from the row cache (place
/// `CACHE_PLACE`) when it has seen what they must see, else on the server
/// (the writer, or the replicas as routed).
pub enum MysqlReads {
    Writer,
    Routed(Replicas),
    /// The cache's place is the last; the others are the writer's (0) or,
    /// with `--read-from replicas`, the servers'.
    Cached(Arc<RowCacheService>, Option<Replicas>),
}

/// Reads routed over the servers.
pub struct Replicas {
    topology: Arc<Topology>,
    /// With `--read-consistency strict`.
    strict: Option<Arc<WriterPositions>>,
}

impl MysqlReads {
    fn replicas(&self) -> Option<&Replicas> {
        match self {
            MysqlReads::Routed(r) | MysqlReads::Cached(_, Some(r)) => Some(r),
            _ => None,
        }
    }

    /// The row cache's place (with `Cached`): after the others.
    fn cache_place(&self) -> usize {
        self.replicas().map_or(1, |r| r.topology.server_count())
    }
}

/// The frontier and arrival a routed read carries.
fn frontier_of(p: Option<&ReadPosition>) -> Option<(&Arc<mysql_wire::GtidSet>, Instant)> {
    match p {
        Some(ReadPosition::Frontier { frontier, arrived }) => Some((frontier, *arrived)),
        _ => None,
    }
}

impl Replicas {
    /// Where a read that must see `frontier` (what hsd acknowledged when it
    /// arrived) may run.
    async fn route(
        &self,
        frontier: Option<(&Arc<mysql_wire::GtidSet>, Instant)>,
        reads: usize,
    ) -> Route<Option<topology::ReadRoute>> {
        let t = &self.topology;
        let (frontier, arrived) = match frontier {
            Some((frontier, arrived)) => (frontier.clone(), arrived),
            None => (Arc::default(), Instant::now()),
        };
        // A Galera peer reads causally: it has every commit before the
        // read already.
        let frontier = match &self.strict {
            Some(w) if !t.is_galera(t.read_primary()) => match w.since(arrived).await {
                Some(writer) => {
                    let mut both = (*frontier).clone();
                    both.merge(&writer);
                    Arc::new(both)
                }
                None => {
                    return Route {
                        place: t.read_primary(),
                        _lease: None,
                    }
                }
            },
            _ => frontier,
        };
        let route = t.route_read(&frontier, reads).await;
        Route {
            place: route.server,
            _lease: Some(route),
        }
    }

    fn frontier(&self) -> ReadPosition {
        ReadPosition::Frontier {
            frontier: self.topology.frontier(),
            arrived: Instant::now(),
        }
    }
}

/// What a read must have seen: the frontier of the writes hsd
/// acknowledged (replicas) and when it arrived (strict: what the writer
/// had then, too), or what the row cache must have applied.
pub enum ReadPosition {
    Frontier {
        frontier: Arc<mysql_wire::GtidSet>,
        arrived: Instant,
    },
    Cache(MustSee, Option<Box<ReadPosition>>),
}

impl ReadRouter for MysqlReads {
    type Position = ReadPosition;
    type Lease = Option<topology::ReadRoute>;

    fn places(&self) -> usize {
        match self {
            MysqlReads::Writer => 1,
            MysqlReads::Routed(r) => r.topology.server_count(),
            MysqlReads::Cached(..) => self.cache_place() + 1,
        }
    }

    fn must_see(&self) -> Option<Arc<Self::Position>> {
        match self {
            MysqlReads::Writer => None,
            MysqlReads::Routed(r) => Some(Arc::new(r.frontier())),
            MysqlReads::Cached(c, r) => Some(Arc::new(ReadPosition::Cache(
                c.must_see(),
                r.as_ref().map(|r| Box::new(r.frontier())),
            ))),
        }
    }

    async fn route(
        &self,
        must_see: Option<&Self::Position>,
        reads: usize,
    ) -> Route<Option<topology::ReadRoute>> {
        let place = |place| Route {
            place,
            _lease: None,
        };
        match (self, must_see) {
            (MysqlReads::Writer, _) => place(0),
            (MysqlReads::Routed(r), must_see) => r.route(frontier_of(must_see), reads).await,
            (MysqlReads::Cached(c, elsewhere), Some(ReadPosition::Cache(m, inner))) => {
                if c.may_serve(m).await {
                    return place(self.cache_place());
                }
                match elsewhere {
                    Some(r) => r.route(frontier_of(inner.as_deref()), reads).await,
                    None => place(0),
                }
            }
            (MysqlReads::Cached(_, Some(r)), _) => r.route(None, reads).await,
            (MysqlReads::Cached(_, None), _) => place(0),
        }
    }

    fn fallback(&self) -> usize {
        match self {
            MysqlReads::Writer | MysqlReads::Cached(_, None) => 0,
            MysqlReads::Routed(r) | MysqlReads::Cached(_, Some(r)) => r.topology.read_primary(),
        }
    }

    fn unreachable(&self, place: usize, error: &StorageError) {
        if let Some(r) = self.replicas() {
            if place < r.topology.server_count() {
                r.topology.note_unreachable(place, error);
            }
        }
    }

    fn place_failed(&self, error: &StorageError) -> bool {
        error.is_unreachable() || errors::says_nothing_about_the_data(error)
    }
}

#[cfg(test)]
mod tests {
    use super::topology::decide::Role;
    use super::*;

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn routed_reads_go_where_the_topology_says_and_leave_an_unreachable_server_out() {
        let t = topology::polled_for_tests(ReadFrom::Replicas);
        let router = MysqlReads::Routed(Replicas {
            topology: t.clone(),
            strict: None,
        });
        assert_eq!(router.places(), 3);
        assert_eq!(router.fallback(), 0);
        let rt = rt();
        let must_see = router.must_see();
        let first = rt.block_on(router.route(must_see.as_deref(), 1)).place;
        assert_ne!(first, 0, "a replica has everything: the read goes there");
        router.unreachable(first, &StorageError::Unavailable("reset".into()));
        let unusable = t
            .roles()
            .iter()
            .filter(|r| matches!(r, Role::Unusable(_)))
            .count();
        assert_eq!(unusable, 1, "{:?}", t.roles());
        for _ in 0..4 {
            let place = rt.block_on(router.route(must_see.as_deref(), 1)).place;
            assert_ne!(place, first);
        }
    }

    #[test]
    fn the_writer_router_has_one_place_and_nothing_to_see() {
        let router = MysqlReads::Writer;
        assert_eq!(router.places(), 1);
        assert!(router.must_see().is_none());
        assert_eq!(rt().block_on(router.route(None, 1)).place, 0);
    }
}
