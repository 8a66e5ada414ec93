//! `P`: resolve db, table, index and column names against the table's
//! metadata. Metadata is read fresh on every `P` (so DDL made by others is
//! seen) and identical openings share one `OpenedIndex`, whose id keys the
//! backends' statement caches and the grouping of lookups.

use super::storage_error_kind;
use crate::backend::{OpenedIndex, StorageConn, TableMeta};
use hs_proto::{ErrorKind, OpenIndexRequest};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

type OpenKey = (Vec<u8>, Vec<u8>, Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>);

/// Opened indexes shared by all connections.
#[derive(Default)]
pub struct Catalog {
    next_id: AtomicU64,
    opened: Mutex<HashMap<OpenKey, Arc<OpenedIndex>>>,
}

/// Bound on distinct openings remembered; beyond it the map starts afresh
/// (connections keep their own `Arc`s, so nothing in use is lost).
const MAX_REMEMBERED: usize = 10_000;

pub async fn open_index<C: StorageConn>(
    conn: &mut C,
    catalog: &Catalog,
    req: &OpenIndexRequest,
) -> Result<Arc<OpenedIndex>, ErrorKind> {
    let (Ok(db), Ok(table)) = (
        std::str::from_utf8(&req.db),
        std::str::from_utf8(&req.table),
    ) else {
        return Err(ErrorKind::OpenTable);
    };
    let meta = conn.describe(db, table).await.map_err(|e| {
        tracing::debug!(db, table, error = %e, "open_index failed");
        match storage_error_kind(&e) {
            ErrorKind::Storage(_) => ErrorKind::OpenTable,
            other => other,
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
    if let Some(existing) = opened.get(&key) {
        if *existing.table == meta {
            return Ok(existing.clone());
        }
    }
    let index = resolve(meta, req, catalog.next_id.fetch_add(1, Ordering::Relaxed))?;
    let index = Arc::new(index);
    if opened.len() >= MAX_REMEMBERED {
        opened.clear();
    }
    opened.insert(key, index.clone());
    Ok(index)
}

fn resolve(meta: TableMeta, req: &OpenIndexRequest, id: u64) -> Result<OpenedIndex, ErrorKind> {
    let index = meta.index_position(&req.index).ok_or(ErrorKind::IdxNum)?;
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
