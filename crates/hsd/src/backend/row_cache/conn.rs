//! `CachedConn`: a storage connection that answers point lookups from the
//! row cache and hands everything else to the connection it wraps.
//!
//! A lookup the cache may hold (`keys`) and holds is answered from it;
//! one it may hold but does not is read from the server with every column
//! of the table, under a lease taken before the read, answered with the
//! columns it asked for and stored whole (if no eviction came meanwhile).
//! Rows of one `scan_many` still reach the visitor in scan order.

use super::keys::{cacheable_index, key_from_request, KeyBytes};
use super::{CachedRow, Lease, RowCache, RowValues, TableState};
use crate::backend::{
    Committed, FilterMode, FilterVerdict, OpenedIndex, RowInsert, RowView, RowVisitor, RowWrite,
    Scan, ScanStep, StorageConn, StorageError, TableMeta, WriteBatching,
};
use hs_proto::{FindOp, Value};
use std::sync::Arc;

/// Ids of the indexes opened with every column for fills: apart from the
/// ids `P` gives (a backend groups lookups by id).
const FILL_INDEX_IDS: u64 = 1 << 63;

/// A storage connection in front of the cache: `serves` says whether its
/// lookups are answered from the cache (the router sent them to the
/// cache's place) or go to the server; either way its writes are counted
/// (`RowCache::note_write`).
pub(crate) struct CachedConn<S> {
    inner: S,
    cache: Option<Arc<RowCache>>,
    serves: bool,
}

impl<S> CachedConn<S> {
    /// Lookups answered from `cache`.
    pub(crate) fn new(inner: S, cache: Arc<RowCache>) -> CachedConn<S> {
        CachedConn {
            inner,
            cache: Some(cache),
            serves: true,
        }
    }

    /// Lookups go to the server; writes are counted in `cache`'s.
    pub(crate) fn counting(inner: S, cache: Option<Arc<RowCache>>) -> CachedConn<S> {
        CachedConn {
            inner,
            cache,
            serves: false,
        }
    }

    fn wrote(&self) {
        if let Some(c) = &self.cache {
            c.note_write();
        }
    }
}

/// What one scan of a call becomes.
enum Plan {
    Hit(Arc<CachedRow>),
    /// Read from the server with every column (`opened`: which of this
    /// call's fill indexes), then stored.
    Fill {
        table: Arc<TableState>,
        key: KeyBytes,
        lease: Lease,
        opened: usize,
    },
    /// Read from the server as asked.
    Pass,
}

/// A scan the cache can answer: an `=` by a whole key of a cacheable
/// unique index, no filters, nothing but its rows asked for.
fn cache_key(scan: &Scan<'_>) -> Option<KeyBytes> {
    let index = scan.index.index_meta();
    let plain = scan.op == FindOp::Eq
        && scan.filters.is_empty()
        && scan.filter_mode == FilterMode::None
        && !scan.with_locator
        && scan.after.is_none()
        && scan.fetch > 0;
    if !plain || !cacheable_index(&scan.index.table, index) {
        return None;
    }
    key_from_request(&scan.index.table, index, &scan.keys)
}

impl<S: StorageConn> CachedConn<S> {
    fn plan(&self, scans: &[Scan<'_>], fill_indexes: &mut Vec<OpenedIndex>) -> Vec<Plan> {
        let cache = match &self.cache {
            Some(c) if self.serves && c.serving() => c,
            _ => return scans.iter().map(|_| Plan::Pass).collect(),
        };
        scans
            .iter()
            .map(|scan| {
                let Some(mut key) = cache_key(scan) else {
                    return Plan::Pass;
                };
                let Some(table) = cache.table(&scan.index.table) else {
                    return Plan::Pass;
                };
                let index = scan.index.index;
                if !cache.own(&table, index, &mut key) {
                    return Plan::Pass;
                }
                if let Some(row) = cache.get(&table, &key) {
                    return Plan::Hit(row);
                }
                let Some(lease) = cache.lease(&table, &key) else {
                    return Plan::Pass;
                };
                let opened = fill_indexes
                    .iter()
                    .position(|o| Arc::ptr_eq(&o.table, &scan.index.table) && o.index == index)
                    .unwrap_or_else(|| {
                        let columns = (0..scan.index.table.columns.len()).collect();
                        fill_indexes.push(OpenedIndex {
                            id: FILL_INDEX_IDS | fill_indexes.len() as u64,
                            table: scan.index.table.clone(),
                            index,
                            columns,
                            filter_columns: Vec::new(),
                        });
                        fill_indexes.len() - 1
                    });
                Plan::Fill {
                    table,
                    key,
                    lease,
                    opened,
                }
            })
            .collect()
    }
}

impl<S: StorageConn> StorageConn for CachedConn<S> {
    async fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        self.inner.describe(db, table).await
    }

    async fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        let mut fill_indexes = Vec::new();
        let plans = self.plan(scans, &mut fill_indexes);
        // The scans the server runs, and which scan of the call each is.
        let mut server_scans = Vec::new();
        let mut origin = Vec::new();
        for (i, (scan, plan)) in scans.iter().zip(&plans).enumerate() {
            let index = match plan {
                Plan::Hit(_) => continue,
                Plan::Fill { opened, .. } => &fill_indexes[*opened],
                Plan::Pass => scan.index,
            };
            let whole = matches!(plan, Plan::Fill { .. });
            server_scans.push(Scan {
                index,
                op: scan.op,
                keys: scan.keys.clone(),
                filters: scan.filters,
                filter_mode: scan.filter_mode,
                fetch: scan.fetch,
                with_locator: scan.with_locator,
                after: scan.after,
            });
            origin.push((i, whole));
        }
        let mut filled: Vec<Option<RowValues>> = vec![None; scans.len()];
        // Hits are handed out in turn with the server's rows: every scan
        // before the one a server row belongs to first.
        let mut next_hit = 0;
        let mut hits_before = |upto: usize, visit: &mut RowVisitor<'_>| {
            while next_hit < upto {
                if let Plan::Hit(row) = &plans[next_hit] {
                    let view = Projected {
                        row: Whole::Cached(row),
                        columns: &scans[next_hit].index.columns,
                    };
                    visit(next_hit, &view);
                }
                next_hit += 1;
            }
        };
        if !server_scans.is_empty() {
            let mut on_row = |j: usize, row: &dyn RowView| -> ScanStep {
                let Some(&(i, whole)) = origin.get(j) else {
                    return ScanStep::Stop;
                };
                hits_before(i, visit);
                if !whole {
                    return visit(i, row);
                }
                let columns = &scans[i].index.columns;
                if filled[i].is_none() {
                    let n = scans[i].index.table.columns.len();
                    filled[i] = Some((0..n).map(|c| row.column(c).map(Box::from)).collect());
                } else {
                    // A second row for a unique key: the key is not one
                    // the cache may hold after all.
                    filled[i] = Some(Vec::new());
                }
                visit(
                    i,
                    &Projected {
                        row: Whole::Server(row),
                        columns,
                    },
                )
            };
            self.inner.scan_many(&server_scans, &mut on_row).await?;
        }
        hits_before(scans.len(), visit);
        let Some(cache) = &self.cache else {
            return Ok(());
        };
        for (plan, row) in plans.into_iter().zip(filled) {
            if let (
                Plan::Fill {
                    table, key, lease, ..
                },
                Some(row),
            ) = (plan, row)
            {
                if !row.is_empty() {
                    cache.fill(lease, &table, key, row);
                }
            }
        }
        Ok(())
    }

    fn write_batching(&self) -> WriteBatching {
        self.inner.write_batching()
    }

    async fn insert_rows(
        &mut self,
        rows: &[RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>> {
        let done = self.inner.insert_rows(rows).await;
        self.wrote();
        done
    }

    async fn write_rows(&mut self, writes: &[RowWrite<'_>]) -> Vec<Result<u64, StorageError>> {
        let done = self.inner.write_rows(writes).await;
        self.wrote();
        done
    }

    async fn serialize_modifies(&mut self, table: &TableMeta) -> Result<(), StorageError> {
        self.inner.serialize_modifies(table).await
    }

    fn end_serialized(&mut self) {
        self.inner.end_serialized()
    }

    async fn begin(&mut self) -> Result<(), StorageError> {
        self.inner.begin().await
    }

    async fn commit(&mut self) -> Committed {
        let done = self.inner.commit().await;
        // Counted whatever the outcome: a commit in doubt may have
        // committed.
        self.wrote();
        done
    }

    async fn rollback(&mut self) {
        self.inner.rollback().await;
        self.wrote();
    }

    fn idle_deadline(&self) -> Option<std::time::Instant> {
        self.inner.idle_deadline()
    }

    async fn release_idle(&mut self) {
        self.inner.release_idle().await
    }
}

/// A whole row: from the cache, or as the server handed it (every column).
enum Whole<'a> {
    Cached(&'a CachedRow),
    Server(&'a dyn RowView),
}

/// A whole row seen through the columns a request opened.
struct Projected<'a> {
    row: Whole<'a>,
    columns: &'a [usize],
}

impl RowView for Projected<'_> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        let c = *self.columns.get(i)?;
        match &self.row {
            Whole::Cached(row) => row.get(c)?.as_deref(),
            Whole::Server(row) => row.column(c),
        }
    }

    fn filter_state(&self) -> FilterVerdict {
        FilterVerdict::Pass
    }

    fn locator(&self) -> Vec<Value> {
        Vec::new()
    }

    fn exact(&self, _k: usize) -> Option<&[u8]> {
        None
    }
}
