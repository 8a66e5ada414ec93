//! `P`: resolve db, table, index and column names against the table's
//! metadata. Metadata is read fresh on every `P` (so DDL made by others is
//! seen) and identical openings share one `OpenedIndex`, whose id keys the
//! backends' statement caches and the grouping of lookups.
//!
//! What `P` may make hsd keep is bounded: a column list may name at most
//! `max_listed_columns` columns (the original takes any number of repeats;
//! hsd answers `fld` beyond the bound), and the catalog forgets its
//! openings once they hold `MAX_REMEMBERED_BYTES`.

use super::storage_error_kind;
use hs_proto::{ErrorKind, OpenIndexRequest};
use hsd_storage::{OpenedIndex, StorageConn, StorageError, TableMeta};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type OpenKey = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Opened indexes shared by all connections.
pub(crate) struct Catalog {
    next_id: AtomicU64,
    opened: Mutex<Remembered>,
    /// Bytes the remembered openings may hold (`MAX_REMEMBERED_BYTES`).
    max_bytes: usize,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog::with_byte_limit(MAX_REMEMBERED_BYTES)
    }
}

/// The openings the catalog remembers, and about how many bytes they hold.
#[derive(Default)]
struct Remembered {
    map: HashMap<OpenKey, Arc<OpenedIndex>>,
    bytes: usize,
}

/// Bounds on distinct openings remembered, by count and by bytes; beyond
/// either the map starts afresh (connections keep their own `Arc`s, so
/// nothing in use is lost).
const MAX_REMEMBERED: usize = 10_000;
const MAX_REMEMBERED_BYTES: usize = 64 << 20;

/// Most names one column list of `P` may hold: as many as the table has
/// columns (a column may be listed twice, but listing more than the table
/// has is only ever repeats), and at least `MIN_LISTED_COLUMNS` so a small
/// table's columns can still be repeated. The original took any number; a
/// longer list answers `2 1 fld` (docs/protocol.md, hsd's limits).
pub(crate) fn max_listed_columns(table: &TableMeta) -> usize {
    table.columns.len().max(MIN_LISTED_COLUMNS)
}

/// See `max_listed_columns`.
pub(crate) const MIN_LISTED_COLUMNS: usize = 64;

pub(crate) async fn open_index<C: StorageConn>(
    storage: &mut C,
    catalog: &Catalog,
    req: &OpenIndexRequest,
) -> Result<Arc<OpenedIndex>, ErrorKind> {
    let (Ok(db), Ok(table)) = (
        std::str::from_utf8(&req.db),
        std::str::from_utf8(&req.table),
    ) else {
        return Err(ErrorKind::OpenTable);
    };
    let meta = storage.describe(db, table).await.map_err(|e| {
        tracing::debug!(db, table, error = %e, "open_index failed");
        match (&e, storage_error_kind(&e)) {
            // The server could not be reached: the table may well exist,
            // so not `open_table` (a mistyped name) but `1 1 2013`, as
            // every request answers while the server cannot be reached.
            (StorageError::Unavailable(_), kind) => kind,
            (_, ErrorKind::Storage(_)) => ErrorKind::OpenTable,
            (_, other) => other,
        }
    })?;
    let key: OpenKey = (
        req.db.clone(),
        req.table.clone(),
        req.index.clone(),
        req.columns.clone(),
        req.filter_columns.clone(),
    );
    let mut opened = catalog.opened.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(existing) = opened.map.get(&key) {
        if *existing.table == meta {
            return Ok(existing.clone());
        }
    }
    let index = resolve(meta, req, catalog.next_id.fetch_add(1, Ordering::Relaxed))?;
    let index = Arc::new(index);
    let cost = opening_bytes(&key, &index);
    if opened.map.len() >= MAX_REMEMBERED || opened.bytes + cost > catalog.max_bytes {
        opened.map.clear();
        opened.bytes = 0;
    }
    // Same names and a changed table: the old opening goes, and its bytes.
    let replaced = opened.map.get(&key).map(|old| opening_bytes(&key, old));
    opened.bytes = opened.bytes.saturating_sub(replaced.unwrap_or(0)) + cost;
    opened.map.insert(key, index.clone());
    Ok(index)
}

impl Catalog {
    /// A catalog whose openings may hold `max_bytes`.
    pub(crate) fn with_byte_limit(max_bytes: usize) -> Catalog {
        Catalog {
            next_id: AtomicU64::new(0),
            opened: Mutex::new(Remembered::default()),
            max_bytes,
        }
    }

    /// Distinct openings remembered, and about how many bytes they hold.
    #[cfg(test)]
    fn remembered(&self) -> (usize, usize) {
        let opened = self.opened.lock().unwrap_or_else(|p| p.into_inner());
        (opened.map.len(), opened.bytes)
    }
}

/// About what remembering an opening costs: its key's names, its column
/// positions and its table's metadata (each opening may hold its own).
fn opening_bytes(key: &OpenKey, index: &OpenedIndex) -> usize {
    const PER_NAME: usize = std::mem::size_of::<Vec<u8>>();
    let names = key.3.iter().chain(&key.4).map(|n| n.len() + PER_NAME);
    key.0.len() + key.1.len() + key.2.len() + names.sum::<usize>() + held_bytes(index)
}

/// The part of `opening_bytes` that the opening itself holds.
fn held_bytes(index: &OpenedIndex) -> usize {
    const PER_POSITION: usize = std::mem::size_of::<usize>();
    const PER_COLUMN: usize = std::mem::size_of::<hsd_storage::ColumnMeta>();
    let table = &index.table;
    let columns: usize = table
        .columns
        .iter()
        .map(|c| PER_COLUMN + c.name.len() + c.name_sql.len() + c.select_sql.len())
        .sum();
    let indexes: usize = table
        .indexes
        .iter()
        .map(|i| {
            i.key_sql
                .iter()
                .chain(&i.tiebreak_sql)
                .map(String::len)
                .sum::<usize>()
        })
        .sum();
    (index.columns.len() + index.filter_columns.len()) * PER_POSITION + columns + indexes
}

fn resolve(meta: TableMeta, req: &OpenIndexRequest, id: u64) -> Result<OpenedIndex, ErrorKind> {
    let index = meta.index_position(&req.index).ok_or(ErrorKind::IdxNum)?;
    let most = max_listed_columns(&meta);
    if req.columns.len() > most || req.filter_columns.len() > most {
        return Err(ErrorKind::Fld);
    }
    let lookup = |names: &[Vec<u8>]| -> Result<Vec<usize>, ErrorKind> {
        names
            .iter()
            .map(|n| meta.column_position(n).ok_or(ErrorKind::Fld))
            .collect()
    };
    let columns = lookup(&req.columns)?;
    let filter_columns = lookup(&req.filter_columns)?;
    Ok(OpenedIndex {
        id,
        table: Arc::new(meta),
        index,
        columns,
        filter_columns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsd_sqlite::{open_db, SqliteConn, Synchronous};

    fn opening(columns: Vec<Vec<u8>>) -> OpenIndexRequest {
        OpenIndexRequest {
            index_id: 0,
            db: b"test".to_vec(),
            table: b"wide".to_vec(),
            index: b"PRIMARY".to_vec(),
            columns,
            filter_columns: Vec::new(),
        }
    }

    #[test]
    fn column_lists_and_remembered_openings_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..100)
            .map(|i| format!("column_{i:03}_{}", "x".repeat(40)))
            .collect();
        let ddl = format!(
            "CREATE TABLE wide (id INTEGER PRIMARY KEY, {})",
            names
                .iter()
                .map(|n| format!("{n} TEXT"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        open_db(dir.path(), "test", true, Synchronous::Off)
            .unwrap()
            .execute_batch(&ddl)
            .unwrap();
        let mut storage = SqliteConn::new(
            dir.path().to_path_buf(),
            Synchronous::Off,
            None,
            None,
            hsd_sqlite::MMAP_SIZE,
        );
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let limit = 1 << 20;
        let catalog = Catalog::with_byte_limit(limit);
        rt.block_on(async {
            // As many names as the table has columns (101), repeats included.
            let most = vec![names[0].as_bytes().to_vec(); 101];
            assert!(open_index(&mut storage, &catalog, &opening(most.clone()))
                .await
                .is_ok());
            let mut over = most;
            over.push(b"id".to_vec());
            assert_eq!(
                open_index(&mut storage, &catalog, &opening(over))
                    .await
                    .err(),
                Some(ErrorKind::Fld)
            );
            // Distinct openings of every column: each holds about 30 KB.
            let mut most_held = 0;
            for i in 0..200 {
                let mut columns: Vec<Vec<u8>> =
                    names.iter().map(|n| n.as_bytes().to_vec()).collect();
                columns.rotate_left(i % names.len());
                columns.push(if i < 100 {
                    b"id".to_vec()
                } else {
                    names[0].as_bytes().to_vec()
                });
                assert!(open_index(&mut storage, &catalog, &opening(columns))
                    .await
                    .is_ok());
                most_held = most_held.max(catalog.remembered().1);
            }
            let (count, bytes) = catalog.remembered();
            assert!(most_held <= limit, "held {most_held} bytes");
            assert!(
                count < 200,
                "every opening was kept: {count}, {bytes} bytes"
            );
        });
    }
}
