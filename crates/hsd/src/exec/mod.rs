//! HandlerSocket semantics, written once for every backend.
//!
//! `open` resolves a `P` against a table's metadata; `find` runs find
//! requests, grouping every scan of a batch into one `scan_many` call so a
//! backend can answer many lookups with one statement; `write` runs inserts and
//! find-and-modify inside the transaction its caller opened. It is generic
//! over the storage connection and runs on the event loop that owns it:
//! on the embedded store it never suspends, on MySQL it awaits the server.

pub mod find;
pub mod open;
pub mod write;

pub use find::{run_reads, ReadTask};
pub use open::{open_index, Catalog};
pub use write::{run_write, WriteOutcome, WriteTask};

use crate::backend::{FilterMode, OpenedIndex, ResolvedFilter, Scan, StorageError};
use hs_proto::{ErrorKind, FilterKind, FindRequest};

/// Maps a storage failure to the error line a client sees.
pub fn storage_error_kind(e: &StorageError) -> ErrorKind {
    match e {
        StorageError::OpenTable(_) => ErrorKind::OpenTable,
        other => ErrorKind::Storage(other.client_code()),
    }
}

/// A find request checked against its opened index: everything a scan needs.
pub struct PreparedFind<'a> {
    pub index: &'a OpenedIndex,
    pub req: &'a FindRequest,
    pub filters: Vec<ResolvedFilter>,
}

/// The checks that need the opened index (section 4 of the spec).
pub fn prepare_find<'a>(
    index: &'a OpenedIndex,
    req: &'a FindRequest,
) -> Result<PreparedFind<'a>, ErrorKind> {
    let key_len = index.key_len();
    if req.keys.len() > key_len {
        return Err(ErrorKind::KpNum);
    }
    if let Some(inc) = &req.in_clause {
        if inc.key_column as usize >= req.keys.len() {
            return Err(ErrorKind::KpNum);
        }
    }
    let mut filters = Vec::with_capacity(req.filters.len());
    for f in &req.filters {
        let Some(&column) = index.filter_columns.get(f.column as usize) else {
            return Err(ErrorKind::FilterFld);
        };
        if index.table.columns[column].is_blob {
            return Err(ErrorKind::FilterBlob);
        }
        filters.push(ResolvedFilter {
            kind: f.kind,
            op: f.op,
            column,
            value: f.value.clone(),
        });
    }
    Ok(PreparedFind {
        index,
        req,
        filters,
    })
}

impl<'a> PreparedFind<'a> {
    /// The scans this find runs: one, or one per IN value (each taking at
    /// most the row its seek lands on).
    pub fn scans(&'a self, with_locator: bool) -> Vec<Scan<'a>> {
        let keys: Vec<Option<&[u8]>> = self.req.keys.iter().map(|k| k.as_deref()).collect();
        let has_while = self.filters.iter().any(|f| f.kind == FilterKind::While);
        match &self.req.in_clause {
            None => {
                let filter_mode = if self.filters.is_empty() {
                    FilterMode::None
                } else if has_while {
                    FilterMode::StateColumn {
                        exclude_skipped: true,
                    }
                } else {
                    FilterMode::InWhere
                };
                vec![Scan {
                    index: self.index,
                    op: self.req.op,
                    keys,
                    filters: &self.filters,
                    filter_mode,
                    fetch: u64::from(self.req.limit) + u64::from(self.req.offset),
                    with_locator,
                }]
            }
            Some(inc) => {
                let filter_mode = if self.filters.is_empty() {
                    FilterMode::None
                } else {
                    FilterMode::StateColumn {
                        exclude_skipped: false,
                    }
                };
                inc.values
                    .iter()
                    .map(|v| {
                        let mut k = keys.clone();
                        k[inc.key_column as usize] = v.as_deref();
                        Scan {
                            index: self.index,
                            op: self.req.op,
                            keys: k,
                            filters: &self.filters,
                            filter_mode,
                            fetch: 1,
                            with_locator,
                        }
                    })
                    .collect()
            }
        }
    }
}

/// Counts rows across a find's scans: filter states, offset, limit.
#[derive(Debug)]
pub struct RowCounter {
    offset_left: u64,
    limit_left: u64,
    pub done: bool,
}

/// What to do with one row.
#[derive(Debug, PartialEq, Eq)]
pub enum RowDecision {
    Take,
    Skip,
    /// Ignore it and everything after it.
    End,
}

impl RowCounter {
    pub fn new(req: &FindRequest) -> Self {
        RowCounter {
            offset_left: u64::from(req.offset),
            limit_left: u64::from(req.limit),
            done: false,
        }
    }

    pub fn decide(&mut self, filter_state: i64) -> RowDecision {
        if self.done {
            return RowDecision::End;
        }
        match filter_state {
            1 => return RowDecision::Skip,
            2 => {
                self.done = true;
                return RowDecision::End;
            }
            _ => {}
        }
        if self.offset_left > 0 {
            self.offset_left -= 1;
            return RowDecision::Skip;
        }
        self.limit_left -= 1;
        if self.limit_left == 0 {
            self.done = true;
        }
        RowDecision::Take
    }
}
