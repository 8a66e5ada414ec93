//! `TextDecoder`: the text parser plus the bytes still to swallow.

use super::{parse_text, Command, TextError, TextFrame, TextLimits};
use crate::decoded::Decoded;

/// What `TextDecoder::decode` found (`Skipped`: the rest of a refused
/// request's data block).
pub type TextDecoded<'a> = Decoded<Command<'a>, TextError>;

/// `parse_text` plus the one piece of state a text connection keeps
/// between reads: how much of a refused data block is still to be dropped.
#[derive(Clone, Debug)]
pub struct TextDecoder {
    limits: TextLimits,
    swallow: usize,
}

impl TextDecoder {
    pub fn new(limits: TextLimits) -> Self {
        TextDecoder { limits, swallow: 0 }
    }

    pub fn limits(&self) -> &TextLimits {
        &self.limits
    }

    /// Bytes of a refused data block still to be dropped.
    pub fn swallowing(&self) -> usize {
        self.swallow
    }

    /// Looks at the unconsumed bytes of the connection's buffer; the caller
    /// drops the bytes each answer says and calls again.
    pub fn decode<'a>(&mut self, buf: &'a [u8]) -> TextDecoded<'a> {
        if let Some(step) = Decoded::swallowed(&mut self.swallow, buf) {
            return step;
        }
        match parse_text(buf, &self.limits) {
            TextFrame::Incomplete => Decoded::Incomplete,
            TextFrame::Command { command, consumed } => Decoded::Request {
                request: command,
                consumed,
            },
            TextFrame::Error {
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
