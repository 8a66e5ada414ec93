//! What a request line does, as far as reconnecting cares: an `A` or `P` to
//! remember when it succeeds, a read that may be retried on a new connection,
//! or a write that must never be sent twice. Mirrors `hs_proto::parse_request`
//! token by token without allocating (a unit test checks they agree).

use hs_proto::{parse_request, IndexOperation, Request, MAX_INDEX_ID};

/// The retry/replay class of one request line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `A ...`: remembered (the whole line) when it succeeds.
    Auth(Vec<u8>),
    /// `P <id> ...`: remembered by id when it succeeds.
    Open(u32, Vec<u8>),
    /// No side effect on the data (a find without modify, or a line the
    /// server rejects before touching anything): safe to retry.
    Read,
    /// Insert or find-and-modify: never retried.
    Write,
}

impl Kind {
    pub(crate) fn is_write(&self) -> bool {
        matches!(self, Kind::Write)
    }
}

/// Classifies a line (without LF; one trailing CR is ignored, as the server
/// drops it).
pub(crate) fn classify(line: &[u8]) -> Kind {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    match parse_request(line) {
        Ok(Request::Auth(_)) => Kind::Auth(line.to_vec()),
        Ok(Request::OpenIndex(open)) if open.index_id <= MAX_INDEX_ID => {
            Kind::Open(open.index_id, line.to_vec())
        }
        Ok(Request::Exec(exec))
            if exec.index_id <= MAX_INDEX_ID && exec.parse_error(usize::MAX).is_none() =>
        {
            match exec.operation() {
                Ok(IndexOperation::Insert(_)) => Kind::Write,
                Ok(IndexOperation::Find(f))
                    if f.modify.as_ref().is_some_and(|m| m.op.is_some()) =>
                {
                    Kind::Write
                }
                _ => Kind::Read,
            }
        }
        _ => Kind::Read,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples() {
        assert_eq!(classify(b"0\t=\t1\t1"), Kind::Read);
        assert_eq!(classify(b"0\t=\t1\t1\t5\t0\tF\t=\t0\tx"), Kind::Read);
        assert_eq!(classify(b"0\t+\t1\tx"), Kind::Write);
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\tD"), Kind::Write);
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\tD\r"), Kind::Write);
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\tX"), Kind::Read);
        assert_eq!(
            classify(b"0\t=\t1\t1\t1\t0\t@\t0\t1\tq\tU?\tv"),
            Kind::Write
        );
        assert_eq!(classify(b"A\t1\ts"), Kind::Auth(b"A\t1\ts".to_vec()));
        assert_eq!(
            classify(b"P\t12\tdb\tt\tPRIMARY\tc"),
            Kind::Open(12, b"P\t12\tdb\tt\tPRIMARY\tc".to_vec())
        );
        // `P x` opens id 0 on the original.
        assert_eq!(classify(b"P\tx\tdb"), Kind::Open(0, b"P\tx\tdb".to_vec()));
        // The first byte of the modify token decides.
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\tUU\tv"), Kind::Write);
        assert_eq!(classify(b"0\t=\t1\t1\t1\t0\t\tv"), Kind::Read);
        assert_eq!(classify(b""), Kind::Read);
        assert_eq!(classify(b"zz"), Kind::Read);
    }
}
