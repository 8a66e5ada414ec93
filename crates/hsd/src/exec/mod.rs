//! HandlerSocket semantics, written once for every backend and every
//! protocol front: answers go to an `Answer`, which the front encodes.
//!
//! `open` resolves a `P` against a table's metadata; `find` runs find
//! requests, grouping every scan of a batch into one `scan_many` call so a
//! backend can answer many lookups with one statement; `write` runs a
//! group's inserts and find-and-modify inside the transaction its caller
//! opened, each planned once (`plan`), alone or batched (`write_batch`),
//! with the row-level meaning of a modify in `modify`. It is generic
//! over the storage connection and runs on the event loop that owns it:
//! on the embedded store it never suspends, on MySQL it awaits the server.

mod answer;
pub(crate) mod find;
mod modify;
pub(crate) mod open;
mod plan;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod write;
mod write_batch;

pub(crate) use answer::{failure, Answer, Done, InsertId};
pub(crate) use find::{is_short, run_reads, ReadTask};
pub(crate) use open::{open_index, Catalog};
#[cfg(test)]
pub(crate) use write::run_writes;
pub(crate) use write::{
    may_pause, run_writes_resuming, WalkProgress, WriteLimits, WriteOp, WriteOutcome, WriteTask,
    MAX_WALK_ROWS, WALK_SLICE, WALK_WHOLE_ROWS,
};

use hs_proto::{ErrorKind, FilterKind, FindRequest};
use hsd_storage::{FilterMode, FilterVerdict, OpenedIndex, ResolvedFilter, Scan, StorageError};

/// Maps a storage failure to the error line a client sees.
pub(crate) fn storage_error_kind(e: &StorageError) -> ErrorKind {
    match e {
        StorageError::OpenTable(_) => ErrorKind::OpenTable,
        other => ErrorKind::Storage(other.client_code()),
    }
}

/// A find request checked against its opened index: everything a scan needs.
pub(crate) struct PreparedFind<'a> {
    pub(crate) index: &'a OpenedIndex,
    pub(crate) req: &'a FindRequest,
    /// The key values as the scan uses them: a NULL key on a NOT NULL
    /// column is the empty string (the original cannot store NULL there and
    /// stores the type's zero value).
    pub(crate) keys: Vec<Option<&'a [u8]>>,
    pub(crate) filters: Vec<ResolvedFilter>,
}

/// The checks that need the opened index, in the original's order:
/// `kpnum`, then `filterblob` (a non-NULL value on a BLOB/TEXT column).
/// `filterfld` was answered while parsing.
pub(crate) fn prepare_find<'a>(
    index: &'a OpenedIndex,
    req: &'a FindRequest,
) -> Result<PreparedFind<'a>, ErrorKind> {
    let key_len = index.key_len();
    if req.keys.len() > key_len {
        return Err(ErrorKind::KpNum);
    }
    let key_columns = &index.index_meta().key_columns;
    let keys = req
        .keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let not_null = key_columns
                .get(i)
                .copied()
                .flatten()
                .is_some_and(|c| !index.table.columns[c].nullable);
            match k {
                None if not_null => Some(&b""[..]),
                other => other.as_deref(),
            }
        })
        .collect();
    let mut filters = Vec::with_capacity(req.filters.len());
    for f in &req.filters {
        let Some(&column) = index.filter_columns.get(f.column as usize) else {
            return Err(ErrorKind::FilterFld);
        };
        if f.value.is_some() && index.table.columns[column].is_blob {
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
        keys,
        filters,
    })
}

impl<'a> PreparedFind<'a> {
    /// How many scans this find runs: one, or one per IN value. Each IN
    /// value is one seek that takes at most the row it lands on; its value
    /// replaces the key at the IN position, and a position beyond the keys
    /// given replaces nothing (the same seek runs once per value, as on the
    /// original). A line may hold millions of IN values: their scans are
    /// made one at a time (`scan`), as they run.
    pub(crate) fn scan_count(&self) -> usize {
        match self.req.active_in() {
            None => 1,
            Some(_) if RowCounter::reads(self.req) == 0 => 0,
            Some(inc) => inc.seeks(),
        }
    }

    /// Scan `i` of the find (`i < scan_count()`).
    pub(crate) fn scan(&'a self, i: usize, with_locator: bool) -> Scan<'a> {
        let has_while = self.filters.iter().any(|f| f.kind == FilterKind::While);
        let Some(inc) = self.req.active_in() else {
            let filter_mode = if self.filters.is_empty() {
                FilterMode::None
            } else if has_while {
                FilterMode::StateColumn {
                    exclude_skipped: true,
                }
            } else {
                FilterMode::InWhere
            };
            return Scan {
                index: self.index,
                op: self.req.op,
                keys: self.keys.clone(),
                filters: &self.filters,
                filter_mode,
                fetch: RowCounter::reads(self.req),
                with_locator,
                after: None,
            };
        };
        let filter_mode = if self.filters.is_empty() {
            FilterMode::None
        } else {
            FilterMode::StateColumn {
                exclude_skipped: false,
            }
        };
        let position = inc.position.map_or(usize::MAX, |p| p as usize);
        let mut keys = self.keys.clone();
        if let Some(slot) = keys.get_mut(position) {
            *slot = Some(inc.value(i));
        }
        Scan {
            index: self.index,
            op: self.req.op,
            keys,
            filters: &self.filters,
            filter_mode,
            fetch: 1,
            with_locator,
            after: None,
        }
    }
}

/// Counts rows across a find's scans as the original's loop did: it reads
/// while `taken < limit + offset` (in 32 bits, so a large limit plus an
/// offset wraps), an `F` filter's false row is passed over, a `W` filter's
/// ends the scan, the first `offset` passing rows are skipped.
#[derive(Debug, Clone)]
pub(crate) struct RowCounter {
    limit: u32,
    skip: u32,
    taken: u32,
    pub(crate) done: bool,
}

/// What to do with one row.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum RowDecision {
    Take,
    Skip,
    /// Ignore it and everything after it.
    End,
}

impl RowCounter {
    pub(crate) fn new(req: &FindRequest) -> Self {
        let mut c = RowCounter {
            limit: req.effective_limit(),
            skip: req.offset,
            taken: 0,
            done: false,
        };
        c.done = !c.may_read();
        c
    }

    /// At most how many rows passing the filters the loop reads.
    pub(crate) fn reads(req: &FindRequest) -> u64 {
        u64::from(req.effective_limit().wrapping_add(req.offset))
    }

    fn may_read(&self) -> bool {
        self.taken < self.limit.wrapping_add(self.skip)
    }

    /// Decides about the next row read, given what its filters say. `done`
    /// tells afterwards whether the loop reads any further row.
    pub(crate) fn decide(&mut self, filter_state: FilterVerdict) -> RowDecision {
        if self.done {
            return RowDecision::End;
        }
        let decision = match filter_state {
            FilterVerdict::Skip => RowDecision::Skip,
            FilterVerdict::Stop => {
                self.done = true;
                return RowDecision::End;
            }
            _ if self.skip > 0 => {
                self.skip -= 1;
                RowDecision::Skip
            }
            _ => {
                self.taken += 1;
                RowDecision::Take
            }
        };
        self.done = !self.may_read();
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_proto::FindOp;

    fn req(limit: u32, offset: u32) -> FindRequest {
        FindRequest {
            op: FindOp::Ge,
            keys: vec![Some(b"1".to_vec())],
            limit,
            offset,
            in_clause: None,
            filters: Vec::new(),
            modify: None,
        }
    }

    fn run(limit: u32, offset: u32, states: &[i64]) -> Vec<usize> {
        let mut c = RowCounter::new(&req(limit, offset));
        let mut taken = Vec::new();
        for (i, &s) in states.iter().enumerate() {
            if c.decide(FilterVerdict::from_state(s)) == RowDecision::Take {
                taken.push(i);
            }
        }
        taken
    }

    #[test]
    fn limit_offset_and_filters() {
        assert_eq!(run(0, 0, &[0, 0]), vec![0]);
        assert_eq!(run(2, 1, &[0, 0, 0, 0]), vec![1, 2]);
        assert_eq!(run(2, 0, &[1, 0, 2, 0]), vec![1]);
    }

    #[test]
    fn limit_plus_offset_wraps() {
        // Verified against the original: 4294967295 + 2 wraps to 1 row read.
        assert_eq!(RowCounter::reads(&req(u32::MAX, 2)), 1);
        assert_eq!(run(u32::MAX, 2, &[0, 0, 0]), Vec::<usize>::new());
        assert_eq!(RowCounter::reads(&req(u32::MAX, 1)), 0);
        assert!(RowCounter::new(&req(u32::MAX, 1)).done);
    }
}
