//! The memcached front's `exec::Answer`: what the executor found or did,
//! kept as values in one buffer (the session turns them into memcached's
//! answer lines, which need a row's joined value and its length before
//! the bytes, so there is nothing to encode until the row is whole).

use crate::exec::{Answer, Done};
use hs_proto::ErrorKind;

/// A find's rows or a write's outcome.
#[derive(Debug, Default)]
pub(crate) struct McAnswer {
    /// Every value's bytes, end to end.
    bytes: Vec<u8>,
    /// Where each value lies in `bytes` (None: NULL), row after row.
    cells: Vec<Option<(usize, usize)>>,
    columns: usize,
    done: Option<Done>,
    failed: Option<ErrorKind>,
}

impl McAnswer {
    /// The rows found, each as its opened columns' values.
    pub(crate) fn rows(&self) -> impl Iterator<Item = Vec<Option<&[u8]>>> + '_ {
        self.cells.chunks(self.columns.max(1)).map(|row| {
            row.iter()
                .map(|cell| cell.map(|(start, end)| &self.bytes[start..end]))
                .collect()
        })
    }

    /// The first row found, if any.
    pub(crate) fn first_row(&self) -> Option<Vec<Option<&[u8]>>> {
        self.rows().next().filter(|r| !r.is_empty())
    }

    /// What a write came to.
    pub(crate) fn done(&self) -> Option<Done> {
        self.done
    }

    pub(crate) fn failure(&self) -> Option<ErrorKind> {
        self.failed
    }
}

impl Answer for McAnswer {
    fn with_capacity(bytes: usize) -> Self {
        McAnswer {
            bytes: Vec::with_capacity(bytes.min(1 << 16)),
            ..McAnswer::default()
        }
    }

    fn begin_rows(&mut self, columns: usize) {
        self.columns = columns;
    }

    fn value(&mut self, value: Option<&[u8]>) {
        let cell = value.map(|v| {
            let start = self.bytes.len();
            self.bytes.extend_from_slice(v);
            (start, self.bytes.len())
        });
        self.cells.push(cell);
    }

    fn end_rows(&mut self) {}

    fn done(&mut self, done: Done) {
        self.done = Some(done);
    }

    fn failed(&mut self, kind: ErrorKind) {
        self.failed = Some(kind);
    }

    fn len(&self) -> usize {
        self.bytes.len() + self.cells.len() * 8
    }

    fn is_failure(&self) -> bool {
        self.failed.is_some()
    }
}
