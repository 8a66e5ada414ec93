//! The row cache's and its reader's Prometheus metrics, read from the
//! cache's counters when scraped.

use super::RowCacheService;
use prometheus::core::{Collector, Desc};
use prometheus::proto::MetricFamily;
use prometheus::{Gauge, IntCounter, IntGauge, Registry};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

struct CacheCollector {
    service: Weak<RowCacheService>,
    hits: IntCounter,
    misses: IntCounter,
    fills: IntCounter,
    fills_discarded: IntCounter,
    fills_held: IntCounter,
    binlog_evictions: IntCounter,
    capacity_evictions: IntCounter,
    entries: IntGauge,
    bytes: IntGauge,
    serving: IntGauge,
    reader_file: IntGauge,
    reader_offset: IntGauge,
    reader_lag: IntGauge,
    reader_idle: Gauge,
    reader_starts: IntCounter,
    primary_changes: IntCounter,
    reader_stolen: IntCounter,
    reader_connection: IntGauge,
    position_waits: IntCounter,
    verified: IntCounter,
    stale_found: IntCounter,
}

/// Sets a counter to `to` (it only grows).
fn advance(c: &IntCounter, to: u64) {
    let now = c.get();
    if to > now {
        c.inc_by(to - now);
    }
}

impl CacheCollector {
    fn all(&self) -> Vec<&dyn Collector> {
        vec![
            &self.hits,
            &self.misses,
            &self.fills,
            &self.fills_discarded,
            &self.fills_held,
            &self.binlog_evictions,
            &self.capacity_evictions,
            &self.entries,
            &self.bytes,
            &self.serving,
            &self.reader_file,
            &self.reader_offset,
            &self.reader_lag,
            &self.reader_idle,
            &self.reader_starts,
            &self.primary_changes,
            &self.reader_stolen,
            &self.reader_connection,
            &self.position_waits,
            &self.verified,
            &self.stale_found,
        ]
    }
}

impl Collector for CacheCollector {
    fn desc(&self) -> Vec<&Desc> {
        self.all().into_iter().flat_map(|c| c.desc()).collect()
    }

    fn collect(&self) -> Vec<MetricFamily> {
        if let Some(s) = self.service.upgrade() {
            let st = s.cache.stats();
            advance(&self.hits, st.hits);
            advance(&self.misses, st.misses);
            advance(&self.fills, st.fills);
            advance(&self.fills_discarded, st.fills_discarded);
            advance(&self.fills_held, st.fills_held);
            advance(&self.binlog_evictions, st.evictions_by_feed);
            advance(&self.capacity_evictions, st.evictions_by_capacity);
            advance(&self.verified, st.verified);
            advance(&self.stale_found, st.stale_found);
            self.entries.set(st.entries as i64);
            self.bytes.set(st.bytes as i64);
            self.serving.set(i64::from(s.cache.serving()));
            let applied = s.feed.applied.borrow().position.clone();
            let file_number = applied
                .file
                .rsplit_once('.')
                .and_then(|(_, n)| n.parse::<i64>().ok())
                .unwrap_or(0);
            self.reader_file.set(file_number);
            self.reader_offset.set(applied.offset as i64);
            self.reader_lag
                .set(s.feed.lag_seconds.load(Ordering::Relaxed));
            self.reader_idle.set(s.feed.idle_seconds());
            advance(&self.reader_starts, s.feed.restarts.load(Ordering::Relaxed));
            advance(
                &self.primary_changes,
                s.feed.switches.load(Ordering::Relaxed),
            );
            advance(&self.reader_stolen, s.feed.stolen.load(Ordering::Relaxed));
            advance(
                &self.position_waits,
                s.positions.asked.load(Ordering::Relaxed),
            );
            self.reader_connection.set(
                i64::try_from(s.feed.connection_id.load(Ordering::Relaxed)).unwrap_or(i64::MAX),
            );
        }
        self.all().into_iter().flat_map(|c| c.collect()).collect()
    }
}

pub(super) fn register(registry: &Registry, service: &Arc<RowCacheService>) -> anyhow::Result<()> {
    let counter = |name: &str, help: &str| IntCounter::new(name, help);
    let gauge = |name: &str, help: &str| IntGauge::new(name, help);
    let c = CacheCollector {
        service: Arc::downgrade(service),
        hits: counter("row_cache_hits_total", "Lookups answered from the row cache")?,
        misses: counter(
            "row_cache_misses_total",
            "Cacheable lookups the row cache did not hold (read from the server)",
        )?,
        fills: counter("row_cache_fills_total", "Rows stored in the row cache")?,
        fills_discarded: counter(
            "row_cache_fills_discarded_total",
            "Rows read for the cache and not stored: a change of their key (or table) came meanwhile",
        )?,
        fills_held: counter(
            "row_cache_fills_held_total",
            "Cacheable lookups read plainly and not stored: a writer held the row (the fill's locking read does not wait)",
        )?,
        binlog_evictions: counter(
            "row_cache_binlog_evictions_total",
            "Cached rows evicted because the binary log showed a change of their key",
        )?,
        capacity_evictions: counter(
            "row_cache_capacity_evictions_total",
            "Cached rows evicted to stay within --row-cache-mib",
        )?,
        entries: gauge("row_cache_entries", "Rows in the row cache")?,
        bytes: gauge(
            "row_cache_bytes",
            "Bytes the row cache holds (keys and bookkeeping included)",
        )?,
        serving: gauge(
            "row_cache_serving",
            "1 while the binary log streams and the cache may answer",
        )?,
        reader_file: gauge(
            "binlog_reader_file",
            "The number of the binlog file the reader has applied up to",
        )?,
        reader_offset: gauge(
            "binlog_reader_offset",
            "The offset in that file the reader has applied up to",
        )?,
        reader_lag: gauge(
            "binlog_reader_lag_seconds",
            "Seconds between the last transaction's commit and its arrival at the reader",
        )?,
        reader_idle: Gauge::new(
            "binlog_reader_idle_seconds",
            "Seconds since the binary log stream last delivered anything (heartbeats included)",
        )?,
        reader_starts: counter(
            "binlog_reader_starts_total",
            "Times the binary log stream started (1 + reconnections)",
        )?,
        primary_changes: counter(
            "row_cache_primary_changes_total",
            "Times the primary changed (--replica): the row cache dropped every entry and its binlog reader moved to the new primary",
        )?,
        reader_stolen: counter(
            "binlog_reader_stolen_total",
            "Times another replica registered with the reader's server id took its stream (--row-cache-server-id)",
        )?,
        reader_connection: gauge(
            "binlog_reader_connection_id",
            "The server's id of the connection the binary log streams on (its processlist id)",
        )?,
        position_waits: counter(
            "row_cache_position_waits_total",
            "Read batches that asked the server's binlog position before the cache could answer them (strict reads; acknowledged ones only after a commit whose GTID hsd does not know, or without GTIDs)",
        )?,
        verified: counter(
            "row_cache_verified_total",
            "Cached rows the verifier compared with the server once the binary log reader had applied a position asked after reading it (--row-cache-verify)",
        )?,
        stale_found: counter(
            "row_cache_stale_found_total",
            "Cached rows the verifier found to differ from the server with no change of them in the binary log; each dropped its table's entries",
        )?,
    };
    registry.register(Box::new(c))?;
    Ok(())
}
