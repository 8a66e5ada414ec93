//! The row cache on MySQL/MariaDB (`--row-cache-mib`): the binary log
//! reader keeps it exact (`feed`), the server's position tells reads when
//! the cache has seen what they must see (`positions`), and an operator
//! sees it on `--admin-address` (`metrics`). See docs/mysql.md, "The row
//! cache".
//!
//! The cache is a place reads may run (`MysqlReads::Cached`): a batch goes
//! there only once the reader has applied a position that covers what the
//! batch must see (`--read-consistency`), else to the server.

mod feed;
mod metrics;
mod positions;

use self::feed::{Feed, FeedState};
use self::positions::{Positions, Request};
use super::binlog::{BinlogReader, ReaderSettings};
use super::link::LinkSettings;
use crate::backend::row_cache::RowCache;
use mysql_wire::MysqlUrl;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a read served elsewhere than the writer must have seen
/// (`--read-consistency`).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ReadConsistency {
    /// Every write this hsd process acknowledged before the read arrived.
    Acknowledged,
    /// Every write committed on the writer before the read arrived, from
    /// any client or process.
    Strict,
}

/// How long a batch waits for the reader to reach the position it must
/// see before it reads the server instead.
const CATCH_UP_WAIT: Duration = Duration::from_millis(10);

/// The cache's settings.
#[derive(Debug, Clone)]
pub(crate) struct CacheSettings {
    /// `--row-cache-mib`, in bytes.
    pub(crate) bytes: usize,
    pub(crate) consistency: ReadConsistency,
}

/// What a read arriving now must see.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MustSee {
    /// This process's writes finished by then.
    writes: u64,
    arrived: Instant,
}

/// The cache, its reader and the position asker, shared by every loop.
pub(crate) struct RowCacheService {
    pub(crate) cache: Arc<RowCache>,
    feed: Arc<FeedState>,
    positions: Positions,
    consistency: ReadConsistency,
    _reader: BinlogReader,
}

/// The replica id the reader registers with: one per process, so that two
/// hsd processes on one server do not drop each other's stream.
fn reader_server_id() -> u32 {
    0x4853_0000 | (std::process::id() & 0xffff)
}

impl RowCacheService {
    /// Checks the server (the refusals name the setting), starts the
    /// reader and the position asker on the calling runtime, registers the
    /// metrics.
    pub(crate) async fn start(
        settings: CacheSettings,
        url: &MysqlUrl,
        timeout: Duration,
        registry: &prometheus::Registry,
    ) -> anyhow::Result<Arc<RowCacheService>> {
        let reader = ReaderSettings {
            url: url.clone(),
            timeout,
            server_id: reader_server_id(),
        };
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
            RowCache::new(settings.bytes).with_vetter(Box::new(move |t| {
                let _ = vet_tx.send(Request::Vet(t));
            })),
        );
        let (positions, latest) = Positions::new(tx);
        let link = LinkSettings::new(url.clone(), timeout).map_err(|e| anyhow::anyhow!(e))?;
        tokio::spawn(positions::serve(link, rx, latest, cache.clone()));
        let feed = Arc::new(FeedState::new());
        let reader = BinlogReader::start(
            reader,
            Feed {
                cache: cache.clone(),
                state: feed.clone(),
            },
        )
        .await
        .map_err(|e| anyhow::anyhow!("--row-cache-mib: {e}"))?;
        let service = Arc::new(RowCacheService {
            cache,
            feed,
            positions,
            consistency: settings.consistency,
            _reader: reader,
        });
        metrics::register(registry, &service)?;
        tracing::info!(
            "row cache: {} MiB, reads {:?}",
            settings.bytes >> 20,
            settings.consistency
        );
        Ok(service)
    }

    pub(crate) fn must_see(&self) -> MustSee {
        MustSee {
            writes: self.cache.writes(),
            arrived: Instant::now(),
        }
    }

    /// Whether a batch that must see `must_see` may be answered from the
    /// cache: the reader streams and has applied a position the server
    /// had when it was asked after what the batch must see (waiting up to
    /// `CATCH_UP_WAIT` for it).
    pub(crate) async fn may_serve(&self, must_see: &MustSee) -> bool {
        if !self.cache.serving() {
            return false;
        }
        let strict = self.consistency == ReadConsistency::Strict;
        let Some(target) = self.positions.covering(must_see, strict).await else {
            return false;
        };
        let mut applied = self.feed.applied.subscribe();
        if applied.borrow_and_update().reached(&target.position) {
            return self.cache.serving();
        }
        let caught_up = async {
            while applied.changed().await.is_ok() {
                if applied.borrow_and_update().reached(&target.position) {
                    return true;
                }
            }
            false
        };
        tokio::time::timeout(CATCH_UP_WAIT, caught_up)
            .await
            .unwrap_or(false)
            && self.cache.serving()
    }
}
