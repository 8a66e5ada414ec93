//! `BinaryDecoder`: the binary parser plus the bytes still to skip (the
//! body of an unknown opcode, a value over the item size).

use super::{parse_binary_gated, BinaryError, BinaryFrame, BinaryRequest};
use crate::decoded::Decoded;

/// What `BinaryDecoder::decode` found (`Skipped`: the rest of a refused
/// request's body).
pub type BinaryDecoded<'a> = Decoded<BinaryRequest<'a>, BinaryError>;

/// `parse_binary` plus the one piece of state a binary connection keeps
/// between reads.
#[derive(Clone, Debug)]
pub struct BinaryDecoder {
    max_item_size: usize,
    swallow: usize,
    /// SASL is on and the connection has not authenticated yet.
    auth_required: bool,
}

impl BinaryDecoder {
    pub fn new(max_item_size: usize) -> Self {
        BinaryDecoder {
            max_item_size,
            swallow: 0,
            auth_required: false,
        }
    }

    /// Whether requests other than SASL's and Version are refused
    /// ("Auth failure.", then close): set while a connection to a server
    /// with SASL has not authenticated.
    pub fn require_auth(&mut self, required: bool) {
        self.auth_required = required;
    }

    /// Bytes of a refused body still to be dropped.
    pub fn swallowing(&self) -> usize {
        self.swallow
    }

    /// Looks at the unconsumed bytes of the connection's buffer; the caller
    /// drops the bytes each answer says and calls again.
    pub fn decode<'a>(&mut self, buf: &'a [u8]) -> BinaryDecoded<'a> {
        if let Some(step) = Decoded::swallowed(&mut self.swallow, buf) {
            return step;
        }
        match parse_binary_gated(buf, self.max_item_size, self.auth_required) {
            BinaryFrame::Incomplete => Decoded::Incomplete,
            BinaryFrame::Request { request, consumed } => Decoded::Request { request, consumed },
            BinaryFrame::Error {
                error,
                consumed,
                swallow,
            } => {
                self.swallow = swallow;
                Decoded::Error { error, consumed }
            }
        }
    }
}
