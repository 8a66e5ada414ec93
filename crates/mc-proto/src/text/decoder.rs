//! `TextDecoder`: the text parser plus the bytes still to swallow.

use super::{parse_text, Command, TextError, TextFrame, TextLimits};

/// What `TextDecoder::decode` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// Wait for more bytes.
    Incomplete,
    /// Drop this many bytes: the rest of a refused request's data block.
    Skipped(usize),
    Command {
        command: Command<'a>,
        consumed: usize,
    },
    /// Answer the error (`TextError::encode`), then drop `consumed` bytes.
    Error { error: TextError, consumed: usize },
}

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
    pub fn decode<'a>(&mut self, buf: &'a [u8]) -> Decoded<'a> {
        if self.swallow > 0 {
            if buf.is_empty() {
                return Decoded::Incomplete;
            }
            let dropped = self.swallow.min(buf.len());
            self.swallow -= dropped;
            return Decoded::Skipped(dropped);
        }
        match parse_text(buf, &self.limits) {
            TextFrame::Incomplete => Decoded::Incomplete,
            TextFrame::Command { command, consumed } => Decoded::Command { command, consumed },
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
