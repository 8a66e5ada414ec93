//! The text protocol's request parser (classic and meta commands).
//!
//! `parse_text` looks at the start of a connection's read buffer and says
//! one of three things: more bytes are needed; here is a command and the
//! bytes it used (its line, and its data block for the storage commands);
//! or here is the error memcached answers, the bytes it used, the bytes
//! after them memcached would swallow without reading, and whether the
//! connection closes. Commands borrow keys and values from the buffer.
//!
//! The rules are memcached 1.6's, checked byte for byte against Debian's
//! memcached by `tests/memcached_differential.rs`: the line ends at `\n`
//! (one `\r` before it is dropped, a NUL ends it early), tokens are split on
//! spaces only, the number of tokens is checked before anything else
//! (`ERROR`), `noreply` is taken from the last token before the other checks
//! so that a classic command's own error is not sent either, and a data
//! block whose last two bytes are not `\r\n` is consumed whole and answered
//! `CLIENT_ERROR bad data chunk`. `TextDecoder` adds the swallowing.

mod decoder;
mod parser;
#[cfg(test)]
mod tests;

pub use decoder::{TextDecoded, TextDecoder};
pub use parser::parse_text;

use crate::meta::{MetaFlags, MetaKey};

/// The longest key, in bytes.
pub const MAX_KEY_LEN: usize = 250;

/// memcached closes a connection that sends this many bytes without a
/// newline, unless the line is a `get`/`gets` (multi-get lines are long).
pub const DEFAULT_MAX_LINE_LEN: usize = 2048;

/// Per-connection bounds of the text parser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextLimits {
    /// The largest value a storage command may carry (`--memcached-max-item-size`).
    pub max_item_size: usize,
    /// Bytes without a newline after which the connection closes.
    pub max_line_len: usize,
    /// The same for `get`/`gets` lines (memcached has no bound there).
    pub max_multiget_line_len: usize,
}

impl TextLimits {
    /// The most bytes a connection must hold to parse any request these
    /// limits accept: a multi-get line, or a storage line with its block.
    pub fn max_request_len(&self) -> usize {
        self.max_multiget_line_len
            .max(self.max_line_len + self.max_item_size + 2)
    }
}

impl Default for TextLimits {
    fn default() -> Self {
        TextLimits {
            max_item_size: 1024 * 1024,
            max_line_len: DEFAULT_MAX_LINE_LEN,
            max_multiget_line_len: 1024 * 1024,
        }
    }
}

/// The line memcached answers a bad request with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorReply {
    /// `ERROR`: unknown command or wrong number of tokens.
    Error,
    /// `CLIENT_ERROR <message>`.
    ClientError(&'static str),
    /// `SERVER_ERROR <message>`.
    ServerError(&'static str),
    /// Nothing is written (the connection closes).
    Nothing,
}

/// A request memcached refuses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextError {
    pub reply: ErrorReply,
    /// The request said `noreply` in a place memcached honours for its
    /// errors too: nothing is written.
    pub noreply: bool,
    /// The connection closes (after writing the reply, if any).
    pub close: bool,
}

impl TextError {
    fn answer(reply: ErrorReply, noreply: bool) -> Self {
        TextError {
            reply,
            noreply,
            close: false,
        }
    }

    /// Appends what the server writes for this error (maybe nothing).
    pub fn encode(&self, out: &mut Vec<u8>) {
        if self.noreply {
            return;
        }
        crate::response::write_error(out, self.reply);
    }
}

/// How a storage command stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreMode {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
    /// `cas`: store only if the item's cas is still this one.
    Cas(u64),
}

/// A parsed text request. Keys and values borrow the read buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command<'a> {
    /// `get`/`gets`/`gat`/`gats` (`touch` is the new ttl of `gat*`).
    Get {
        keys: Vec<&'a [u8]>,
        return_cas: bool,
        touch: Option<i32>,
    },
    /// `set`/`add`/`replace`/`append`/`prepend`/`cas`.
    Store {
        mode: StoreMode,
        key: &'a [u8],
        client_flags: u32,
        exptime: i32,
        data: &'a [u8],
        noreply: bool,
    },
    Delete {
        key: &'a [u8],
        noreply: bool,
    },
    /// `incr` (increment) or `decr`.
    Arithmetic {
        key: &'a [u8],
        delta: u64,
        increment: bool,
        noreply: bool,
    },
    Touch {
        key: &'a [u8],
        exptime: i32,
        noreply: bool,
    },
    /// `flush_all [delay] [noreply]` (no delay is 0).
    FlushAll {
        delay: i32,
        noreply: bool,
    },
    Version,
    Verbosity {
        level: u32,
        noreply: bool,
    },
    /// `stats [args]`: which groups exist is the server's business.
    Stats {
        args: Vec<&'a [u8]>,
    },
    Quit,
    /// `mg`.
    MetaGet {
        key: MetaKey<'a>,
        flags: MetaFlags<'a>,
    },
    /// `ms` (`mode` is the `M` flag, Set when absent; a `C` flag in `flags`
    /// makes Set and Replace compare-and-set, as in memcached).
    MetaSet {
        key: MetaKey<'a>,
        flags: MetaFlags<'a>,
        mode: StoreMode,
        data: &'a [u8],
    },
    /// `md`.
    MetaDelete {
        key: MetaKey<'a>,
        flags: MetaFlags<'a>,
    },
    /// `ma` (`increment` from the `M` flag, default increment).
    MetaArithmetic {
        key: MetaKey<'a>,
        flags: MetaFlags<'a>,
        increment: bool,
    },
    /// `mn`.
    MetaNoop,
    /// `me <key> [b]`.
    MetaDebug {
        key: MetaKey<'a>,
    },
}

/// What the start of a buffer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TextFrame<'a> {
    /// Not a whole request yet.
    Incomplete,
    Command {
        command: Command<'a>,
        consumed: usize,
    },
    /// A refused request: answer `error`, drop `consumed` bytes, then drop
    /// the next `swallow` bytes unread, whenever they arrive.
    Error {
        error: TextError,
        consumed: usize,
        swallow: usize,
    },
}

/// A key memcached accepts that a table can hold: 1 to 250 bytes, no
/// control characters (memcached itself lets them through; see the crate
/// documentation).
pub fn is_valid_key(key: &[u8]) -> bool {
    !key.is_empty() && key.len() <= MAX_KEY_LEN && key.iter().all(|&b| b > b' ' && b != 0x7f)
}
