//! The memcached wire formats, as hsd's memcached front speaks them.
//!
//! Pure data transformation, like `hs-proto`: bytes in, typed requests out
//! (`text::parse_text` for the text and meta commands, `binary::parse_binary`
//! for the binary protocol), answers encoded back to bytes (`response` for
//! text and meta, `binary` for binary), and the InnoDB memcached plugin's
//! key and value syntax (`keys`). Both protocols' decoders answer in one
//! shape (`decoded`), so a server reads either with one loop. No I/O, no storage: the server decides
//! what a command does; this crate decides what the bytes mean and what a
//! refusal looks like.
//!
//! The reference is memcached 1.6 (Debian 12's 1.6.18): every refusal a
//! client can provoke is answered with memcached's line, noreply hides what
//! memcached hides, and a connection closes only where memcached closes it.
//! `tests/memcached_differential.rs` sends the same bytes to a real memcached
//! and checks the answers byte for byte.
//!
//! # Deliberate differences from memcached
//!
//! A server whose items are table rows cannot, or should not, copy these:
//!
//! - **Keys with control characters** (bytes below 0x21 and 0x7f) are
//!   refused with `CLIENT_ERROR bad command line format`, as the protocol
//!   text asks; memcached itself stores them (a tab or `\r` inside a key).
//!   A NUL still ends the line early, as in memcached, so it cannot reach a key.
//! - **Item size**: `--memcached-max-item-size` bounds the value's bytes;
//!   memcached bounds the whole item (key and header too), so near the
//!   limit the two refuse slightly different sizes. Past it both answer
//!   `SERVER_ERROR object too large for cache` and skip the data block.
//! - **Multi-get lines** are bounded (`TextLimits::max_multiget_line_len`);
//!   memcached buffers a `get` line of any length.
//! - **A refused key in a multi-get** answers only the `CLIENT_ERROR`;
//!   memcached also drops the answers of earlier pipelined commands still
//!   unsent in the same read.
//! - **Meta errors are found before the command runs**: a too-long opaque
//!   with `ma` or `mg` is refused before the item is touched; memcached
//!   applies the increment or touch first and then answers the error.
//! - **`k` on a base64 key** returns the key base64-encoded with `b` when the
//!   request used `b`; memcached follows how the item was first stored.
//! - **`q` on `ma`** hides every success, an auto-created item's too.
//! - **Binary unknown opcodes** skip exactly their body; memcached skips the
//!   body length again after the key and extras it already read, eating the
//!   start of the next request (which it then never answers).
//! - **Admin commands** memcached has and a table server does not
//!   (`shutdown`, `slabs`, `lru`, `lru_crawler`, `watch`, `cache_memlimit`,
//!   `extstore`, `debugtime`, `misbehave`) answer `ERROR`, as unknown ones.
//!
//! The front adds its own (what `flush_all`, `stats` and `verbosity` do to
//! tables); they are listed with it in `docs/memcached.md`.

pub mod binary;
pub mod decoded;
pub mod keys;
pub mod meta;
pub mod number;
pub mod response;
pub mod text;

pub use binary::{
    parse_binary, BinaryCommand, BinaryDecoded, BinaryDecoder, BinaryError, BinaryFrame,
    BinaryRequest, Opcode,
};
pub use decoded::{Decoded, Refusal};
pub use keys::{join_columns, parse_key, split_columns, KeyTarget};
pub use meta::{MetaFlags, MetaKey};
pub use response::{MetaCode, MetaCommand, MetaFacts, Status};
pub use text::{
    is_valid_key, parse_text, Command, ErrorReply, StoreMode, TextDecoded, TextDecoder, TextError,
    TextFrame, TextLimits, MAX_KEY_LEN,
};

/// Which protocol a connection speaks, from its first byte (as memcached
/// decides it: 0x80 is binary, anything else text).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    Text,
    Binary,
}

impl Protocol {
    pub fn detect(first_byte: u8) -> Protocol {
        if first_byte == binary::REQUEST_MAGIC {
            Protocol::Binary
        } else {
            Protocol::Text
        }
    }
}
