//! `CachedConn`: a storage connection that answers point lookups from the
//! row cache and hands everything else to the connection it wraps.
//!
//! A lookup the cache may hold (`keys`) and holds is answered from it;
//! one it may hold but does not is read with every column of the table by
//! `StorageConn::read_for_cache` (a read ordered after every writer of the
//! row), under a lease taken before the read, answered with the columns it
//! asked for and stored whole (if no eviction came meanwhile). Where that
//! read cannot be had (a writer holds the row), the lookup is read as
//! asked and nothing is stored. Rows of one `scan_many` still reach the
//! visitor in scan order.

use super::keys::{cacheable_index, key_from_request, KeyBytes};
use super::{Lease, PackedRow, RowCache, RowValues, TableState};
use crate::{
    Committed, FilterMode, FilterVerdict, OpenedIndex, RowInsert, RowView, RowVisitor, RowWrite,
    Scan, ScanStep, StorageConn, StorageError, TableMeta, WriteBatching,
};
use hs_proto::{FindOp, Value};
use std::sync::Arc;

/// Ids of the indexes opened with every column for fills: apart from the
/// ids `P` gives (a backend groups lookups by id).
const FILL_INDEX_IDS: u64 = 1 << 63;

/// The server's "unknown column" (ER_BAD_FIELD_ERROR): a fill selects
/// every column its table had when described.
const ERR_UNKNOWN_COLUMN: u32 = 1054;

/// A storage connection in front of the cache: `serves` says whether its
/// lookups are answered from the cache (the router sent them to the
/// cache's place) or go to the server; either way its writes are counted
/// (`RowCache::note_write`).
pub struct CachedConn<S> {
    inner: S,
    cache: Option<Arc<RowCache>>,
    serves: bool,
}

impl<S> CachedConn<S> {
    /// Lookups answered from `cache`.
    pub fn new(inner: S, cache: Arc<RowCache>) -> CachedConn<S> {
        CachedConn {
            inner,
            cache: Some(cache),
            serves: true,
        }
    }

    /// Lookups go to the server; writes are counted in `cache`'s.
    pub fn counting(inner: S, cache: Option<Arc<RowCache>>) -> CachedConn<S> {
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
    Hit(PackedRow),
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

/// `scan` again, on `index`.
fn on_index<'a>(scan: &Scan<'a>, index: &'a OpenedIndex) -> Scan<'a> {
    Scan {
        index,
        op: scan.op,
        keys: scan.keys.clone(),
        filters: scan.filters,
        filter_mode: scan.filter_mode,
        fetch: scan.fetch,
        with_locator: scan.with_locator,
        after: scan.after,
    }
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
        let mut plans = self.plan(scans, &mut fill_indexes);
        // The fills first, each by a read the cache may store (or none).
        let fill_scans: Vec<Scan<'_>> = scans
            .iter()
            .zip(&plans)
            .filter_map(|(scan, plan)| match plan {
                Plan::Fill { opened, .. } => Some(on_index(scan, &fill_indexes[*opened])),
                _ => None,
            })
            .collect();
        let mut read: Vec<Option<Vec<RowValues>>> = vec![None; scans.len()];
        if !fill_scans.is_empty() {
            let got = match self.inner.read_for_cache(&fill_scans).await {
                Ok(got) => got,
                // A column the fills select is gone: read as asked instead.
                Err(StorageError::Refused { code, .. }) if code == ERR_UNKNOWN_COLUMN => {
                    for plan in plans.iter_mut() {
                        if let (Plan::Fill { table, .. }, Some(c)) = (&*plan, &self.cache) {
                            c.definition_outdated(table);
                        }
                        if matches!(plan, Plan::Fill { .. }) {
                            *plan = Plan::Pass;
                        }
                    }
                    Vec::new()
                }
                Err(e) => return Err(e),
            };
            let mut got = got.into_iter();
            let cache = self.cache.as_deref();
            for (i, plan) in plans.iter_mut().enumerate() {
                if matches!(plan, Plan::Fill { .. }) {
                    match got.next().flatten() {
                        Some(rows) => read[i] = Some(rows),
                        // A writer holds the row: read as asked, not kept.
                        None => {
                            *plan = Plan::Pass;
                            if let Some(c) = cache {
                                c.fill_held();
                            }
                        }
                    }
                }
            }
        }
        // Everything else on the server, as asked, in one call.
        let mut server_scans = Vec::new();
        let mut origin = Vec::new();
        for (i, (scan, plan)) in scans.iter().zip(&plans).enumerate() {
            if matches!(plan, Plan::Pass) {
                server_scans.push(on_index(scan, scan.index));
                origin.push(i);
            }
        }
        // Hits and fills are handed out in turn with the server's rows:
        // every scan before the one a server row belongs to first.
        let mut next = 0;
        let mut answered_before = |upto: usize, visit: &mut RowVisitor<'_>| {
            while next < upto {
                let columns = &scans[next].index.columns;
                let rows: &[RowValues] = match (&plans[next], &read[next]) {
                    (Plan::Hit(row), _) => {
                        let view = Projected {
                            row: Whole::Cached(row),
                            columns,
                        };
                        visit(next, &view);
                        &[]
                    }
                    (Plan::Fill { .. }, Some(rows)) => rows,
                    _ => &[],
                };
                for row in rows {
                    let view = Projected {
                        row: Whole::Read(row),
                        columns,
                    };
                    if visit(next, &view) == ScanStep::Stop {
                        break;
                    }
                }
                next += 1;
            }
        };
        if !server_scans.is_empty() {
            let mut on_row = |j: usize, row: &dyn RowView| -> ScanStep {
                let Some(&i) = origin.get(j) else {
                    return ScanStep::Stop;
                };
                answered_before(i, visit);
                visit(i, row)
            };
            self.inner.scan_many(&server_scans, &mut on_row).await?;
        }
        answered_before(scans.len(), visit);
        let Some(cache) = &self.cache else {
            return Ok(());
        };
        for (plan, rows) in plans.into_iter().zip(read) {
            if let (
                Plan::Fill {
                    table, key, lease, ..
                },
                Some(mut rows),
            ) = (plan, rows)
            {
                // A unique key finds one row; more, and it is not a key
                // the cache may hold after all.
                if rows.len() == 1 {
                    if let Some(row) = rows.pop() {
                        cache.fill(lease, &table, key, row);
                    }
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

/// A whole row: cached, or read for the cache.
enum Whole<'a> {
    Cached(&'a PackedRow),
    Read(&'a RowValues),
}

/// A whole row seen through the columns a request opened.
struct Projected<'a> {
    row: Whole<'a>,
    columns: &'a [usize],
}

impl RowView for Projected<'_> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        let c = *self.columns.get(i)?;
        match self.row {
            Whole::Cached(row) => row.column(c),
            Whole::Read(row) => row.get(c)?.as_deref(),
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
