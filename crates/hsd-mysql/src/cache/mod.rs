//! The row cache on MySQL/MariaDB (`--row-cache-mib`): the binary log
//! reader keeps it exact (`feed`), the server's position tells reads when
//! the cache has seen what they must see (`positions`), and an operator
//! sees it on `--admin-address` (`metrics`). See docs/mysql.md, "The row
//! cache".
//!
//! The cache is a place reads may run (`MysqlReads::Cached`): a batch goes
//! there only once the reader has applied a position that covers what the
//! batch must see (`--read-consistency`), else to the server. Under
//! `acknowledged`, on a server that numbers every commit, that is the GTIDs
//! of the writes hsd acknowledged (`acked`), compared with those the reader
//! applied, without a question to the server; otherwise (`strict`, a commit
//! whose GTID hsd does not know, MySQL without GTIDs) a position the server
//! answered when asked after what the batch must see (`positions`).
//!
//! With `--replica` the reader follows the primary (`follow`): on each
//! change of it the cache drops everything and serves nothing until the
//! reader streams from the new primary.
//!
//! All of it (reader, feed, position asker, verifier, follower) runs on a
//! thread of its own, `hsd-binlog` (`thread`); the event loops only look
//! into the cache and send the position asker their questions.

mod acked;
mod feed;
mod follow;
mod metrics;
mod positions;
mod thread;
mod verify;

pub(crate) use self::acked::{AckedWrites, NotedCommit};
use self::feed::{Feed, FeedState};
use self::positions::{Positions, Request, Target};
use self::thread::FeedThread;
use super::binlog::{BinlogReader, ReaderSettings};
use super::link::LinkSettings;
use super::topology::Topology;
use hsd_storage::row_cache::RowCache;
use mysql_wire::Flavor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a read served elsewhere than the writer must have seen
/// (`--read-consistency`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum ReadConsistency {
    /// Every write this hsd process acknowledged before the read arrived.
    Acknowledged,
    /// Every write committed on the writer before the read arrived, from
    /// any client or process.
    Strict,
}

/// How long a batch waits for the reader to reach the position it must
/// see before it reads the server instead.
const CATCH_UP_WAIT: Duration = Duration::from_millis(10);
/// How long a batch waits to learn the server's position before it reads
/// from the server instead (the position's link may wait on a busy server).
const POSITION_WAIT: Duration = Duration::from_secs(1);

/// The cache's settings.
#[derive(Debug, Clone)]
pub struct CacheSettings {
    /// `--row-cache-mib`, in bytes.
    pub bytes: usize,
    pub consistency: ReadConsistency,
    /// `--row-cache-server-id` (or the random default).
    pub server_id: u32,
    /// `--row-cache-max-age`, in seconds (`None`: no bound).
    pub max_age: Option<u32>,
    /// `--row-cache-verify`: entries read again per second (`None`: off).
    pub verify_per_second: Option<u32>,
}

/// What a read arriving now must see.
#[derive(Debug, Clone)]
pub struct MustSee {
    /// This process's writes finished by then.
    writes: u64,
    arrived: Instant,
    /// The commit marks of the writes acknowledged by then (`acked`).
    acked: Arc<mysql_wire::GtidSet>,
    /// Commits noted without a GTID by then.
    untracked: u64,
}

/// The cache, its reader and the position asker, shared by every loop.
pub struct RowCacheService {
    pub(crate) cache: Arc<RowCache>,
    feed: Arc<FeedState>,
    positions: Positions,
    consistency: ReadConsistency,
    /// The writes hsd acknowledged, by GTID (the write connections note them).
    pub(crate) acked: Arc<AckedWrites>,
    /// Whether the server numbers every commit, so that `acked` tells what
    /// an `acknowledged` read must see.
    numbered: bool,
    /// Commits without a GTID that a position asked after them, and
    /// applied since, covers: reads compare GTIDs again once it reaches
    /// `acked`'s count.
    untracked_settled: AtomicU64,
    /// With replicas: the primary's changes the reader has caught up with
    /// (`follow`); the cache serves only while it equals the topology's.
    primary: Option<(Arc<Topology>, Arc<AtomicU64>)>,
    /// The reader, or (with replicas) the task that owns it and moves it
    /// to each new primary; stopped with the service.
    _reader: Reading,
    /// The thread all of the feed's tasks run on; stopped (its tasks
    /// dropped) after the reader.
    _thread: Option<FeedThread>,
}

/// Either stops when dropped.
struct Reading {
    _fixed: Option<BinlogReader>,
    following: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Reading {
    fn drop(&mut self) {
        if let Some(task) = &self.following {
            task.abort();
        }
    }
}

/// Where the cache's binlog comes from.
pub(crate) enum CacheSource {
    /// The one server (no `--replica`), by its link settings.
    Single(Box<LinkSettings>),
    /// Every configured server: the reader follows the primary.
    Topology(Arc<Topology>),
}

impl RowCacheService {
    /// Checks the server the reader starts on (the refusals name the
    /// setting), starts the reader and the position asker on the feed's
    /// own thread (`thread.rs`; with replicas, on the primary, and the
    /// task that follows it), registers the metrics.
    pub(crate) async fn start(
        settings: CacheSettings,
        source: CacheSource,
        registry: &prometheus::Registry,
    ) -> anyhow::Result<Arc<RowCacheService>> {
        let thread = FeedThread::start()?;
        let service = thread
            .run(RowCacheService::start_feed(settings, source))
            .await?;
        let service = Arc::new(RowCacheService {
            _thread: Some(thread),
            ..service
        });
        metrics::register(registry, &service)?;
        Ok(service)
    }

    /// `start`'s work, on the feed's thread: every task it spawns runs
    /// there.
    async fn start_feed(
        settings: CacheSettings,
        source: CacheSource,
    ) -> anyhow::Result<RowCacheService> {
        let (link, primary) = match &source {
            CacheSource::Single(link) => ((**link).clone(), None),
            CacheSource::Topology(topology) => {
                let primary = topology.primary();
                let link = topology
                    .link(primary.server)
                    .ok_or_else(|| anyhow::anyhow!("no server {}", primary.server))?;
                (link.clone(), Some(primary))
            }
        };
        let reader = ReaderSettings::on(&link, settings.server_id);
        let refused = BinlogReader::check(reader.clone())
            .await
            .map_err(|e| anyhow::anyhow!("--row-cache-mib: {e}"))?;
        if !refused.is_empty() {
            anyhow::bail!(
                "--row-cache-mib needs the binary log as a replica reads it: {}",
                refused.join("; ")
            );
        }
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let vet_tx = tx.clone();
        let cache = Arc::new(
            RowCache::new(settings.bytes)
                .with_max_age(settings.max_age)
                .with_vetter(Box::new(move |t| {
                    let _ = vet_tx.send(Request::Vet(t));
                })),
        );
        let (positions, latest) = Positions::new(tx);
        let target = Target {
            generation: 0,
            link,
        };
        let (flavor, numbered) = acked::numbering(&target.link)
            .await
            .unwrap_or((Flavor::MySql, false));
        let (targets, target) = tokio::sync::watch::channel(target);
        let verifier_target = target.clone();
        tokio::spawn(positions::serve(target, rx, latest, cache.clone()));
        let feed = Arc::new(FeedState::new(flavor));
        if let Some(per_second) = settings.verify_per_second {
            tokio::spawn(verify::run(
                verifier_target,
                cache.clone(),
                feed.clone(),
                per_second,
            ));
        }
        let first = BinlogReader::start(
            reader.clone(),
            Feed {
                cache: cache.clone(),
                state: feed.clone(),
                generation: 0,
                server_id: settings.server_id,
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("--row-cache-mib: {e}"))?;
        let (reading, primary) = match (source, primary) {
            (CacheSource::Topology(topology), Some(p)) => {
                let followed = Arc::new(AtomicU64::new(p.changes));
                let task = tokio::spawn(follow::follow(
                    follow::Following {
                        topology: topology.clone(),
                        reader,
                        cache: cache.clone(),
                        feed: feed.clone(),
                        targets,
                        followed: followed.clone(),
                    },
                    first,
                ));
                let reading = Reading {
                    _fixed: None,
                    following: Some(task),
                };
                (reading, Some((topology, followed)))
            }
            _ => (
                Reading {
                    _fixed: Some(first),
                    following: None,
                },
                None,
            ),
        };
        let service = RowCacheService {
            cache,
            feed,
            positions,
            consistency: settings.consistency,
            acked: Arc::new(AckedWrites::new(flavor)),
            numbered,
            untracked_settled: AtomicU64::new(0),
            primary,
            _reader: reading,
            _thread: None,
        };
        tracing::info!(
            "row cache: {} MiB, reads {:?}",
            settings.bytes >> 20,
            settings.consistency
        );
        Ok(service)
    }

    /// Whether the reader follows the server that is the primary now
    /// (always, with one server).
    fn follows_primary(&self) -> bool {
        match &self.primary {
            None => true,
            Some((topology, followed)) => {
                followed.load(Ordering::Acquire) == topology.primary_changes()
            }
        }
    }

    pub(crate) fn must_see(&self) -> MustSee {
        // Every write answered before now was noted before its answer.
        MustSee {
            writes: self.cache.writes(),
            arrived: Instant::now(),
            acked: self.acked.marks(),
            untracked: self.acked.untracked(),
        }
    }

    /// `acknowledged`, by GTIDs: whether the reader has applied every
    /// commit `must_see` marks (waiting up to `CATCH_UP_WAIT`); `None`
    /// when GTIDs cannot tell (a commit without one not yet settled).
    async fn applied_acked(&self, must_see: &MustSee) -> Option<bool> {
        if !self.numbered || must_see.untracked > self.untracked_settled.load(Ordering::Acquire) {
            return None;
        }
        let mut applied = self.feed.applied.subscribe();
        if applied.borrow_and_update().covers(&must_see.acked) {
            return Some(true);
        }
        let caught_up = async {
            while applied.changed().await.is_ok() {
                if applied.borrow_and_update().covers(&must_see.acked) {
                    return true;
                }
            }
            false
        };
        Some(
            tokio::time::timeout(CATCH_UP_WAIT, caught_up)
                .await
                .unwrap_or(false),
        )
    }

    /// Whether a batch that must see `must_see` may be answered from the
    /// cache: the reader streams and has applied a position the server
    /// had when it was asked after what the batch must see (waiting up to
    /// `CATCH_UP_WAIT` for it).
    pub(crate) async fn may_serve(&self, must_see: &MustSee) -> bool {
        if !self.cache.serving() || !self.follows_primary() {
            return false;
        }
        let strict = self.consistency == ReadConsistency::Strict;
        let serving = || self.cache.serving() && self.follows_primary();
        if !strict {
            if let Some(applied) = self.applied_acked(must_see).await {
                return applied && serving();
            }
        }
        let generation = self.feed.generation();
        let covering = self.positions.covering(must_see, strict, generation);
        let Some(target) = tokio::time::timeout(POSITION_WAIT, covering)
            .await
            .ok()
            .flatten()
        else {
            return false;
        };
        let mut applied = self.feed.applied.subscribe();
        let reached = applied
            .borrow_and_update()
            .reached(target.generation, &target.position)
            || tokio::time::timeout(CATCH_UP_WAIT, async {
                while applied.changed().await.is_ok() {
                    if applied
                        .borrow_and_update()
                        .reached(target.generation, &target.position)
                    {
                        return true;
                    }
                }
                false
            })
            .await
            .unwrap_or(false);
        if reached && !strict {
            // Asked after the commits without a GTID this batch had to
            // see, and applied: GTIDs tell again from here.
            self.untracked_settled
                .fetch_max(must_see.untracked, Ordering::AcqRel);
        }
        reached && serving()
    }
}
