//! What a decoder (`TextDecoder`, `BinaryDecoder`) found at the start of a
//! connection's unconsumed bytes: one shape for both protocols, so that a
//! server reads either with the same loop.

/// One step of decoding: `R` is the protocol's request, `E` its refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded<R, E> {
    /// Wait for more bytes.
    Incomplete,
    /// Drop this many bytes: the rest of a refused request.
    Skipped(usize),
    Request {
        request: R,
        consumed: usize,
    },
    /// Answer the error (`Refusal::encode`), drop `consumed` bytes, and
    /// close the connection if `Refusal::closes`.
    Error {
        error: E,
        consumed: usize,
    },
}

impl<R, E> Decoded<R, E> {
    /// The step that drops part of what is left of a refused request
    /// (`swallow` bytes, counted down); None when nothing is.
    pub(crate) fn swallowed(swallow: &mut usize, buf: &[u8]) -> Option<Self> {
        if *swallow == 0 {
            return None;
        }
        if buf.is_empty() {
            return Some(Decoded::Incomplete);
        }
        let dropped = (*swallow).min(buf.len());
        *swallow -= dropped;
        Some(Decoded::Skipped(dropped))
    }

    /// The same step with the request and the refusal turned into others.
    pub fn map<R2, E2>(
        self,
        request: impl FnOnce(R) -> R2,
        error: impl FnOnce(E) -> E2,
    ) -> Decoded<R2, E2> {
        match self {
            Decoded::Incomplete => Decoded::Incomplete,
            Decoded::Skipped(n) => Decoded::Skipped(n),
            Decoded::Request {
                request: r,
                consumed,
            } => Decoded::Request {
                request: request(r),
                consumed,
            },
            Decoded::Error { error: e, consumed } => Decoded::Error {
                error: error(e),
                consumed,
            },
        }
    }
}

/// A refused request of either protocol.
pub trait Refusal {
    /// Appends what the server answers (maybe nothing).
    fn encode(&self, out: &mut Vec<u8>);
    /// Whether the connection closes after the answer.
    fn closes(&self) -> bool;
}

impl Refusal for crate::text::TextError {
    fn encode(&self, out: &mut Vec<u8>) {
        crate::text::TextError::encode(self, out);
    }

    fn closes(&self) -> bool {
        self.close
    }
}

impl Refusal for crate::binary::BinaryError {
    fn encode(&self, out: &mut Vec<u8>) {
        crate::binary::BinaryError::encode(self, out);
    }

    fn closes(&self) -> bool {
        self.close
    }
}
