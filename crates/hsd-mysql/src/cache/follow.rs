//! With `--replica`: the binlog reader follows the primary, the server hsd
//! writes to. On each change of it (a promotion, a switchover) the cache
//! stops serving and drops every entry (no entry can be proven current
//! across a change of history: the new primary may lack commits the old
//! one logged, or hold some it never did), and a new reader starts on the
//! new primary from that server's position now. The cache serves again
//! once it streams; until then reads go to the server.

use super::feed::{Feed, FeedState};
use super::positions::Target;
use crate::binlog::{BinlogReader, ReaderSettings};
use crate::topology::{Primary, Topology};
use hsd_storage::row_cache::RowCache;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// How long after a failed start on a new primary the reader tries again.
const RETRY: Duration = Duration::from_secs(1);

/// A change count no primary has: the reader follows none.
const FOLLOWING_NONE: u64 = u64::MAX;

/// What the following task moves.
pub(super) struct Following {
    pub(super) topology: Arc<Topology>,
    /// The first reader's settings; each new primary's link replaces its
    /// link.
    pub(super) reader: ReaderSettings,
    pub(super) cache: Arc<RowCache>,
    pub(super) feed: Arc<FeedState>,
    /// Where the position asker goes.
    pub(super) targets: tokio::sync::watch::Sender<Target>,
    /// The primary's change count the running reader follows.
    pub(super) followed: Arc<AtomicU64>,
}

/// Moves the reader to each new primary, for as long as the service
/// lives (the task is aborted with it). `first` follows the primary the
/// service started with.
pub(super) async fn follow(f: Following, first: BinlogReader) {
    let mut changes = f.topology.primary_changed();
    let mut reader = Some(first);
    loop {
        // Looked at before the first wait too: the primary may have
        // changed while the first reader started.
        let primary = *changes.borrow_and_update();
        if primary.changes == f.followed.load(Ordering::Acquire) {
            if changes.changed().await.is_err() {
                return;
            }
            continue;
        }
        f.followed.store(FOLLOWING_NONE, Ordering::Release);
        // The old reader's events are ignored from here, before it stops.
        let generation = f.feed.switch(&f.cache);
        drop(reader.take());
        let name = f.topology.server_name(primary.server).to_string();
        tracing::warn!(
            primary = %name,
            "row cache: the primary changed; every entry dropped, reads go to the server until the binlog streams from the new primary"
        );
        loop {
            match start_on(&f, primary, generation).await {
                Ok(r) => {
                    reader = Some(r);
                    f.followed.store(primary.changes, Ordering::Release);
                    tracing::info!(primary = %name, "row cache: following the new primary's binlog");
                    break;
                }
                Err(e) => {
                    tracing::warn!(primary = %name, error = %e, "row cache: the binlog reader cannot start on the new primary yet");
                    tokio::time::sleep(RETRY).await;
                    if changes.has_changed().unwrap_or(true) {
                        break;
                    }
                }
            }
        }
    }
}

/// A reader on `primary` for feed `generation`, after the position asker
/// was pointed there.
async fn start_on(
    f: &Following,
    primary: Primary,
    generation: u64,
) -> Result<BinlogReader, String> {
    let link = f
        .topology
        .link(primary.server)
        .ok_or_else(|| format!("no server {}", primary.server))?;
    f.targets.send_replace(Target {
        generation,
        link: link.clone(),
    });
    let settings = ReaderSettings::on(link, f.reader.server_id);
    // `start` refuses a server whose binlog settings or grants do not do.
    BinlogReader::start(
        settings,
        Feed {
            cache: f.cache.clone(),
            state: f.feed.clone(),
            generation,
            server_id: f.reader.server_id,
        },
    )
    .await
}
