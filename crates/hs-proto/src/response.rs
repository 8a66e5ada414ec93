//! Response encoding (sections 2 and 8 of the spec) and a small response parser
//! for clients and tests.

use crate::codec::{decode_token, encode_bytes, encode_token, Value};

/// Every error line the server can answer, with its code and reason token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    Cmd,
    StmtNum,
    Op,
    KLen,
    KpNum,
    InValuesLen,
    FilterType,
    FilterFld,
    FilterBlob,
    ModOp,
    ReadOnly,
    /// `S`, the original's unfinished SQL operation.
    NotImpl,
    IdxNum,
    Fld,
    OpenTable,
    Unauth,
    AuthType,
    /// The storage refused a read or write: `1 1 <number>`.
    Storage(u32),
}

impl ErrorKind {
    pub fn code(self) -> u8 {
        match self {
            ErrorKind::OpenTable | ErrorKind::Storage(_) => 1,
            ErrorKind::Unauth | ErrorKind::AuthType => 3,
            _ => 2,
        }
    }

    /// The reason token, except for `Storage`, whose reason is its number.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorKind::Cmd => "cmd",
            ErrorKind::StmtNum => "stmtnum",
            ErrorKind::Op => "op",
            ErrorKind::KLen => "klen",
            ErrorKind::KpNum => "kpnum",
            ErrorKind::InValuesLen => "invalueslen",
            ErrorKind::FilterType => "filtertype",
            ErrorKind::FilterFld => "filterfld",
            ErrorKind::FilterBlob => "filterblob",
            ErrorKind::ModOp => "modop",
            ErrorKind::ReadOnly => "readonly",
            ErrorKind::NotImpl => "notimpl",
            ErrorKind::IdxNum => "idxnum",
            ErrorKind::Fld => "fld",
            ErrorKind::OpenTable => "open_table",
            ErrorKind::Unauth => "unauth",
            ErrorKind::AuthType => "authtype",
            ErrorKind::Storage(_) => "storage",
        }
    }

    /// A short label for metrics.
    pub fn label(self) -> &'static str {
        self.reason()
    }
}

/// Appends response lines to a buffer. The executor writes rows straight into
/// it, so a find never builds an intermediate row list.
#[derive(Debug, Default)]
pub struct ResponseWriter {
    buf: Vec<u8>,
    /// An error line was written (since the last `clear`).
    error: bool,
}

/// Where a response started, so an error after some rows can discard them.
#[derive(Debug, Clone, Copy)]
pub struct Mark(usize);

impl ResponseWriter {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_capacity(n: usize) -> Self {
        ResponseWriter {
            buf: Vec::with_capacity(n),
            error: false,
        }
    }

    pub fn mark(&self) -> Mark {
        Mark(self.buf.len())
    }

    /// Drops everything written since `mark`.
    pub fn rewind(&mut self, mark: Mark) {
        self.buf.truncate(mark.0);
    }

    /// Starts a success line: `0 <ncols>`. Follow with values, then `end`.
    pub fn begin_ok(&mut self, ncols: usize) {
        self.buf.extend_from_slice(b"0\t");
        push_decimal(&mut self.buf, ncols as u64);
    }

    pub fn value(&mut self, v: Option<&[u8]>) {
        self.buf.push(b'\t');
        encode_token(v, &mut self.buf);
    }

    /// A non-NULL value from plain bytes.
    pub fn bytes(&mut self, v: &[u8]) {
        self.buf.push(b'\t');
        encode_bytes(v, &mut self.buf);
    }

    pub fn number(&mut self, n: u64) {
        self.buf.push(b'\t');
        push_decimal(&mut self.buf, n);
    }

    pub fn end(&mut self) {
        self.buf.push(b'\n');
    }

    /// `0 1` alone (open_index, auth).
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"0\t1\n");
    }

    /// `0 1 <n>` (rows modified, insert id).
    pub fn ok_number(&mut self, n: u64) {
        self.begin_ok(1);
        self.number(n);
        self.end();
    }

    pub fn error(&mut self, kind: ErrorKind) {
        self.error = true;
        self.buf.push(b'0' + kind.code());
        self.buf.extend_from_slice(b"\t1\t");
        match kind {
            ErrorKind::Storage(n) => push_decimal(&mut self.buf, u64::from(n)),
            other => self.buf.extend_from_slice(other.reason().as_bytes()),
        }
        self.buf.push(b'\n');
    }

    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }

    pub fn clear(&mut self) {
        self.buf.clear();
        self.error = false;
    }

    /// Whether the answer is an error line.
    pub fn is_error(&self) -> bool {
        self.error
    }

    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }

    pub fn buffer_mut(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }
}

fn push_decimal(buf: &mut Vec<u8>, n: u64) {
    buf.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// A decoded response line, for clients and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub code: u32,
    pub ncols: usize,
    pub values: Vec<Value>,
}

impl Response {
    /// Parses one response line (without LF).
    pub fn parse(line: &[u8]) -> Option<Response> {
        let mut tokens = line.split(|&b| b == b'\t');
        let code = std::str::from_utf8(tokens.next()?).ok()?.parse().ok()?;
        let ncols = std::str::from_utf8(tokens.next()?).ok()?.parse().ok()?;
        let values = tokens.map(decode_token).collect();
        Some(Response {
            code,
            ncols,
            values,
        })
    }

    pub fn is_ok(&self) -> bool {
        self.code == 0
    }

    /// Rows of a successful find.
    pub fn rows(&self) -> Vec<&[Value]> {
        if self.ncols == 0 {
            return Vec::new();
        }
        self.values.chunks(self.ncols).collect()
    }

    /// The error reason token of a failed request, as text.
    pub fn reason(&self) -> Option<String> {
        self.values
            .first()
            .and_then(|v| v.as_ref())
            .map(|v| String::from_utf8_lossy(v).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_lines() {
        let mut w = ResponseWriter::new();
        w.error(ErrorKind::Cmd);
        w.error(ErrorKind::OpenTable);
        w.error(ErrorKind::Storage(121));
        w.error(ErrorKind::Unauth);
        assert_eq!(
            w.as_bytes(),
            b"2\t1\tcmd\n1\t1\topen_table\n1\t1\t121\n3\t1\tunauth\n"
        );
    }

    #[test]
    fn rows_and_rewind() {
        let mut w = ResponseWriter::new();
        w.ok();
        let mark = w.mark();
        w.begin_ok(2);
        w.value(Some(b"a\tb"));
        w.value(None);
        w.end();
        assert_eq!(&w.as_bytes()[4..], b"0\t2\ta\x01\x49b\t\x00\n");
        let r = Response::parse(&w.as_bytes()[4..w.len() - 1]).unwrap();
        assert_eq!(r.rows(), vec![&[Some(b"a\tb".to_vec()), None][..]]);
        w.rewind(mark);
        assert_eq!(w.as_bytes(), b"0\t1\n");
    }

    #[test]
    fn decimals() {
        let mut w = ResponseWriter::new();
        w.ok_number(0);
        w.ok_number(u64::MAX);
        assert_eq!(w.as_bytes(), b"0\t1\t0\n0\t1\t18446744073709551615\n");
    }
}
