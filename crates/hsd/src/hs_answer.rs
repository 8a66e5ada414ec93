//! HandlerSocket's encoding of the executor's answers (`exec::Answer`):
//! the one place that turns rows and outcomes into answer lines, written
//! straight into the line's buffer (`hs_proto::ResponseWriter`).
//!
//! - rows: `0 <columns> <value>...` (every row's values on one line);
//! - a modify: `0 1 <rows changed>`;
//! - an insert: `0 1 <id>` with an auto-increment column (`0` when the row
//!   gave its own), `0 1` without;
//! - a failure: `<code> 1 <reason or number>`.
//!
//! The session's own answers (an `A` or a `P`, a line refused before it
//! ran) are written here too (`OK_LINE`, `push_error`).

use crate::exec::{Answer, Done, InsertId};
use hs_proto::{ErrorKind, ResponseWriter};

impl Answer for ResponseWriter {
    fn with_capacity(bytes: usize) -> Self {
        ResponseWriter::with_capacity(bytes)
    }

    fn begin_rows(&mut self, columns: usize) {
        self.begin_ok(columns);
    }

    #[inline]
    fn value(&mut self, value: Option<&[u8]>) {
        ResponseWriter::value(self, value);
    }

    fn end_rows(&mut self) {
        self.end();
    }

    fn done(&mut self, done: Done) {
        match done {
            Done::Modified(n) => self.ok_number(n),
            Done::Inserted(InsertId::None) => self.ok(),
            Done::Inserted(InsertId::Given) => self.ok_number(0),
            Done::Inserted(InsertId::Generated(id)) => self.ok_number(id),
        }
    }

    fn failed(&mut self, kind: ErrorKind) {
        self.error(kind);
    }

    fn len(&self) -> usize {
        ResponseWriter::len(self)
    }

    fn is_failure(&self) -> bool {
        self.is_error()
    }
}

/// What an `A` or a `P` that succeeded answers: `0 1`.
pub(crate) const OK_LINE: &[u8] = b"0\t1\n";

/// Appends the error line of a request refused before it ran.
pub(crate) fn push_error(out: &mut Vec<u8>, kind: ErrorKind) {
    let mut line = ResponseWriter::new();
    line.error(kind);
    out.extend_from_slice(line.as_bytes());
}
