//! Conveniences on `hs_proto::Response` (which already has `is_ok`, `rows`
//! and `reason`): turning error responses into `ClientError::Server`, owned
//! rows, and the number in `0 1 <n>` answers.

use hs_proto::{Response, Value};

use crate::error::ClientError;

/// Extra accessors for responses; `use hs_client::ResponseExt`.
pub trait ResponseExt: Sized {
    /// `Ok(self)` for code 0, else `ClientError::Server { code, reason }`.
    fn check(self) -> Result<Response, ClientError>;
    /// The rows of a find, owned.
    fn into_rows(self) -> Vec<Vec<Value>>;
    /// Number of rows of a find (values / ncols).
    fn row_count(&self) -> usize;
    /// The decimal in a `0 1 <n>` answer (rows modified, insert id); `None`
    /// for errors, `0 1` without a value, or a value that is not a number.
    fn number(&self) -> Option<u64>;
}

impl ResponseExt for Response {
    fn check(self) -> Result<Response, ClientError> {
        if self.is_ok() {
            return Ok(self);
        }
        Err(ClientError::Server {
            code: self.code,
            reason: self.reason().unwrap_or_default(),
        })
    }

    fn into_rows(self) -> Vec<Vec<Value>> {
        if self.ncols == 0 {
            return Vec::new();
        }
        self.values
            .chunks(self.ncols)
            .map(<[Value]>::to_vec)
            .collect()
    }

    fn row_count(&self) -> usize {
        self.values.len().checked_div(self.ncols).unwrap_or(0)
    }

    fn number(&self) -> Option<u64> {
        if !self.is_ok() {
            return None;
        }
        let v = self.values.first()?.as_deref()?;
        std::str::from_utf8(v).ok()?.parse().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers() {
        let r = Response::parse(b"0\t2\ta\t\x00\tb\t").expect("parse");
        assert_eq!(r.row_count(), 2);
        assert_eq!(
            r.clone().into_rows(),
            vec![
                vec![Some(b"a".to_vec()), None],
                vec![Some(b"b".to_vec()), Some(Vec::new())]
            ]
        );
        assert!(r.check().is_ok());

        let n = Response::parse(b"0\t1\t42").expect("parse");
        assert_eq!(n.number(), Some(42));
        assert_eq!(Response::parse(b"0\t1").expect("parse").number(), None);

        let e = Response::parse(b"2\t1\tstmtnum").expect("parse");
        assert_eq!(e.number(), None);
        match e.check() {
            Err(ClientError::Server { code: 2, reason }) => assert_eq!(reason, "stmtnum"),
            other => panic!("{other:?}"),
        }
    }
}
