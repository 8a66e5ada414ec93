//! The binary log reader's events applied to the row cache: each row
//! change evicts the keys of its before and after images, a table change
//! drops the table, anything else drops everything; `Applied` moves the
//! position reads wait for, `Lost` stops serving until `Started`.
//!
//! Each reader feeds one generation: when the reader moves to another
//! server (`FeedState::switch`), whatever the old one still delivers is
//! ignored, so positions of two servers are never compared.

use super::super::binlog::{BinlogPosition, BinlogSink, Cell, Change, StreamEvent};
use super::acked::commit_marks;
use hsd_storage::row_cache::{ImageCell, RowCache};
use mysql_wire::{Flavor, GtidSet};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// A position the feed applied, and the generation (the server) it is a
/// position of.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Applied {
    pub(super) generation: u64,
    pub(super) position: BinlogPosition,
    /// The commit marks of what it applied (`acked`): per MariaDB domain
    /// or MySQL source the highest number it has seen; `None` before the
    /// first GTID.
    pub(super) marks: Option<Arc<GtidSet>>,
}

impl Applied {
    /// Whether it is at or past `position` of `generation`.
    pub(super) fn reached(&self, generation: u64, position: &BinlogPosition) -> bool {
        self.generation == generation && self.position.reached(position)
    }

    /// Whether it has applied every commit `acked` marks.
    pub(super) fn covers(&self, acked: &GtidSet) -> bool {
        match &self.marks {
            Some(m) => m.covers(acked),
            None => GtidSet::default().covers(acked),
        }
    }

    /// Its marks with those of `position`'s GTID added.
    fn marks_with(&self, flavor: Flavor, position: &BinlogPosition) -> Option<Arc<GtidSet>> {
        let Some(new) = position
            .gtid
            .as_deref()
            .and_then(|g| commit_marks(flavor, g))
        else {
            return self.marks.clone();
        };
        let mut marks = self.marks.as_deref().cloned().unwrap_or_default();
        marks.merge(&new);
        Some(Arc::new(marks.commit_marks()))
    }
}

/// What the feed has done, for reads and metrics.
pub(super) struct FeedState {
    /// The server speaks MariaDB's GTIDs (else MySQL's).
    flavor: Flavor,
    /// Every transaction up to here has been applied to the cache.
    pub(super) applied: tokio::sync::watch::Sender<Applied>,
    /// The generation events are taken from, held while one is applied.
    gate: Mutex<u64>,
    /// A copy of the gate's generation, read without the lock.
    generation: AtomicU64,
    /// Times the reader moved to a new primary.
    pub(super) switches: AtomicU64,
    /// Times another replica with the reader's server id took the stream.
    pub(super) stolen: AtomicU64,
    /// The server connection the stream runs on (its processlist id).
    pub(super) connection_id: AtomicU64,
    /// Seconds between a transaction's commit and its arrival (server
    /// clock against ours; 0 while idle).
    pub(super) lag_seconds: AtomicI64,
    /// When the stream last delivered anything (heartbeats included).
    pub(super) moved: Mutex<Instant>,
    pub(super) restarts: AtomicU64,
}

impl FeedState {
    pub(super) fn new(flavor: Flavor) -> FeedState {
        FeedState {
            flavor,
            applied: tokio::sync::watch::Sender::new(Applied::default()),
            gate: Mutex::new(0),
            generation: AtomicU64::new(0),
            switches: AtomicU64::new(0),
            stolen: AtomicU64::new(0),
            connection_id: AtomicU64::new(0),
            lag_seconds: AtomicI64::new(0),
            moved: Mutex::new(Instant::now()),
            restarts: AtomicU64::new(0),
        }
    }

    pub(super) fn idle_seconds(&self) -> f64 {
        self.moved
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .elapsed()
            .as_secs_f64()
    }

    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The reader moves to another server: from here on the old one's
    /// events are ignored, the cache serves nothing (fills under way are
    /// discarded) and holds nothing. Returns the new generation, for the
    /// new reader's `Feed`.
    pub(super) fn switch(&self, cache: &RowCache) -> u64 {
        let mut gate = self.gate.lock().unwrap_or_else(|p| p.into_inner());
        *gate += 1;
        self.generation.store(*gate, Ordering::Release);
        cache.stream_lost();
        cache.drop_all();
        self.applied.send_replace(Applied {
            generation: *gate,
            position: BinlogPosition::default(),
            marks: None,
        });
        self.switches.fetch_add(1, Ordering::Relaxed);
        *gate
    }

    fn moved_now(&self) {
        *self.moved.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
    }
}

/// The reader's sink.
pub(super) struct Feed {
    pub(super) cache: Arc<RowCache>,
    pub(super) state: Arc<FeedState>,
    /// The generation this reader feeds (`FeedState::switch`).
    pub(super) generation: u64,
    /// The reader's replica id, for the log.
    pub(super) server_id: u32,
}

fn image(row: &[Cell]) -> Vec<ImageCell<'_>> {
    row.iter()
        .map(|c| match c {
            Cell::Null => ImageCell::Null,
            Cell::Text(v) => ImageCell::Value(v),
            Cell::Undecoded | Cell::Absent => ImageCell::Unknown,
        })
        .collect()
}

impl BinlogSink for Feed {
    fn wants_rows(&self, db: &str, table: &str) -> bool {
        self.cache.holds_table(db, table)
    }

    fn deliver(&mut self, event: StreamEvent) {
        let gate = self.state.gate.lock().unwrap_or_else(|p| p.into_inner());
        if *gate != self.generation {
            return;
        }
        self.state.moved_now();
        match event {
            StreamEvent::Started {
                position,
                connection_id,
            } => {
                self.state.restarts.fetch_add(1, Ordering::Relaxed);
                self.state
                    .connection_id
                    .store(connection_id, Ordering::Relaxed);
                tracing::info!("row cache: the binary log streams from {position}");
                // Streaming from here: it is what has been applied (the
                // reader resumes at its last `Applied`, or starts where
                // the server is, with an empty cache, which nothing before
                // can have left stale).
                let flavor = self.state.flavor;
                self.state.applied.send_modify(|a| {
                    a.marks = a.marks_with(flavor, &position);
                    a.generation = self.generation;
                    a.position = position;
                });
                self.cache.stream_started();
            }
            StreamEvent::Change(Change::Row(row)) => {
                for im in [&row.before, &row.after].into_iter().flatten() {
                    self.cache.row_changed(&row.db, &row.table, &image(im));
                }
            }
            StreamEvent::Change(Change::Table { db, table }) => {
                self.cache.table_changed(&db, &table);
            }
            StreamEvent::Change(Change::Everything { reason }) => {
                tracing::info!("row cache: everything dropped: {reason}");
                self.cache.drop_all();
            }
            StreamEvent::Applied {
                position,
                commit_time,
            } => {
                let lag = if commit_time == 0 {
                    0
                } else {
                    let now = SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_secs());
                    (now as i64 - i64::from(commit_time)).max(0)
                };
                self.state.lag_seconds.store(lag, Ordering::Relaxed);
                let flavor = self.state.flavor;
                self.state.applied.send_if_modified(|a| {
                    let ahead = position.reached(&a.position) && position != a.position;
                    if ahead {
                        a.marks = a.marks_with(flavor, &position);
                        a.position = position;
                    }
                    ahead
                });
            }
            StreamEvent::Lost { reason, stolen } => {
                self.cache.stream_lost();
                if stolen {
                    self.state.stolen.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(
                        server_id = self.server_id,
                        "row cache: another replica registered with the binlog reader's server id and the server gave it the stream ({reason}); reads go to the server until the reader takes it back; give --row-cache-server-id an id no other replica of this server uses"
                    );
                } else {
                    tracing::warn!("row cache: the binary log stream was lost ({reason}); reads go to the server until it streams again");
                }
            }
        }
    }
}
