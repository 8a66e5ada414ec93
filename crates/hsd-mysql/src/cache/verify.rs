//! The verifier: a sample of cached rows read again from the server, on a
//! connection of its own, compared only where a difference proves the
//! entry stale (`--row-cache-verify`, rows per second).
//!
//! For one entry: it is sampled (so it was filled before what follows),
//! its row is read with the fills' own locking read (a row a writer holds
//! gives no verdict), the server's position is asked, and once the reader
//! has applied that position the entry is looked at again. Every change of
//! the row the binary log shows and that committed before the read is then
//! applied, so it would have evicted the entry: if the very same entry is
//! still cached and differs from the row read, a change reached the row
//! where the log did not show it (`sql_log_bin = 0`, a restore). Then the
//! table's entries are dropped and the log says so
//! (`RowCache::verified`). Anything else (the entry evicted or refilled, the
//! reader not there within `APPLY_WAIT`, the link failing) gives no verdict.

use super::super::binlog::master_status;
use super::super::fill::read_locked;
use super::super::link::{Link, LinkSettings};
use super::feed::FeedState;
use super::positions::Target;
use hs_proto::FindOp;
use hsd_storage::row_cache::{RowCache, Sample};
use hsd_storage::{FilterMode, OpenedIndex, Scan};
use std::sync::Arc;
use std::time::Duration;

/// How long the verifier waits for the reader to apply the position it
/// asked; past it, no verdict.
const APPLY_WAIT: Duration = Duration::from_secs(5);

/// Runs for ever, `per_second` samples a second.
pub(super) async fn run(
    mut target: tokio::sync::watch::Receiver<Target>,
    cache: Arc<RowCache>,
    feed: Arc<FeedState>,
    per_second: u32,
) {
    let every = Duration::from_secs(1) / per_second.max(1);
    let mut link: Option<Link> = None;
    let mut generation = u64::MAX;
    loop {
        tokio::time::sleep(every).await;
        let (settings, now) = {
            let t = target.borrow_and_update();
            (t.link.clone(), t.generation)
        };
        if now != generation {
            // Another primary: a link of the old one is no use.
            link = None;
            generation = now;
        }
        let Some(sample) = cache.sample() else {
            continue;
        };
        match verify(&settings, &mut link, &cache, &feed, &sample, generation).await {
            Ok(()) => {}
            Err(e) => {
                tracing::debug!(error = %e, "row cache verifier: no verdict");
                link = None;
            }
        }
    }
}

async fn verify(
    settings: &LinkSettings,
    link: &mut Option<Link>,
    cache: &RowCache,
    feed: &FeedState,
    sample: &Sample,
    generation: u64,
) -> Result<(), String> {
    if link.is_none() {
        *link = Some(
            Link::connect(settings)
                .await
                .map_err(|e| e.error.to_string())?,
        );
    }
    let Some(l) = link.as_mut() else {
        return Ok(());
    };
    let meta = sample.table.meta().clone();
    let columns = meta.columns.len();
    let opened = OpenedIndex {
        id: 0,
        table: meta,
        index: sample.index,
        columns: (0..columns).collect(),
        filter_columns: Vec::new(),
    };
    let parts = sample.key_parts();
    let scan = Scan {
        index: &opened,
        op: FindOp::Eq,
        keys: parts.iter().map(|p| Some(p.as_slice())).collect(),
        filters: &[],
        filter_mode: FilterMode::None,
        fetch: 1,
        with_locator: false,
        after: None,
    };
    let read = read_locked(l, std::slice::from_ref(&scan))
        .await
        .map_err(|f| f.error.to_string())?;
    // A writer holds the row: no verdict.
    let Some(Some(rows)) = read.into_iter().next() else {
        return Ok(());
    };
    let position = master_status(l).await?;
    let mut applied = feed.applied.subscribe();
    let reached = applied.borrow_and_update().reached(generation, &position)
        || tokio::time::timeout(APPLY_WAIT, async {
            while applied.changed().await.is_ok() {
                if applied.borrow_and_update().reached(generation, &position) {
                    return true;
                }
            }
            false
        })
        .await
        .unwrap_or(false);
    if !reached || !cache.still_holds(sample) {
        return Ok(());
    }
    let same = rows.first().is_some_and(|row| {
        row.len() == columns && (0..columns).all(|i| row[i].as_deref() == sample.row.column(i))
    });
    cache.verified(sample, !same);
    Ok(())
}
