//! The binary protocol: request headers and bodies in, responses out.
//!
//! A request is a 24-byte header (magic 0x80, opcode, key length, extras
//! length, data type, vbucket, total body length, opaque, cas; big-endian)
//! followed by extras, key and value. memcached judges a request once its
//! header, extras and key are in, and its checks are kept in its order:
//! a wrong magic closes the connection without an answer; a key or extras
//! longer than the body is answered "Unknown command" and closes; a key over
//! 250 bytes or a body of the wrong shape for its opcode is answered
//! "Invalid arguments" and closes; an unknown opcode is answered "Unknown
//! command" and its body skipped; a value over the item size is answered
//! "Too large." and skipped, and the connection goes on.
//!
//! Quiet variants (GetQ, SetQ, ...) parse to their loud command with
//! `quiet` set; `suppressed` says which answers they leave out.

mod decoder;
mod request;
mod response;
pub mod sasl;
#[cfg(test)]
mod tests;

pub use decoder::{BinaryDecoded, BinaryDecoder};
pub use request::{parse_binary, parse_binary_gated, suppressed};
pub use response::{
    write_counter, write_error, write_get_hit, write_response, write_stat, ResponseHeader,
};

/// The first byte of a request.
pub const REQUEST_MAGIC: u8 = 0x80;
/// The first byte of a response.
pub const RESPONSE_MAGIC: u8 = 0x81;
/// The size of both headers.
pub const HEADER_LEN: usize = 24;

/// The opcodes memcached serves (and Verbosity, which it does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Opcode {
    Get = 0x00,
    Set = 0x01,
    Add = 0x02,
    Replace = 0x03,
    Delete = 0x04,
    Increment = 0x05,
    Decrement = 0x06,
    Quit = 0x07,
    Flush = 0x08,
    GetQ = 0x09,
    Noop = 0x0a,
    Version = 0x0b,
    GetK = 0x0c,
    GetKQ = 0x0d,
    Append = 0x0e,
    Prepend = 0x0f,
    Stat = 0x10,
    SetQ = 0x11,
    AddQ = 0x12,
    ReplaceQ = 0x13,
    DeleteQ = 0x14,
    IncrementQ = 0x15,
    DecrementQ = 0x16,
    QuitQ = 0x17,
    FlushQ = 0x18,
    AppendQ = 0x19,
    PrependQ = 0x1a,
    Verbosity = 0x1b,
    Touch = 0x1c,
    Gat = 0x1d,
    GatQ = 0x1e,
    SaslListMechs = 0x20,
    SaslAuth = 0x21,
    SaslStep = 0x22,
    GatK = 0x23,
    GatKQ = 0x24,
}

impl Opcode {
    pub fn from_u8(byte: u8) -> Option<Opcode> {
        use Opcode::*;
        Some(match byte {
            0x00 => Get,
            0x01 => Set,
            0x02 => Add,
            0x03 => Replace,
            0x04 => Delete,
            0x05 => Increment,
            0x06 => Decrement,
            0x07 => Quit,
            0x08 => Flush,
            0x09 => GetQ,
            0x0a => Noop,
            0x0b => Version,
            0x0c => GetK,
            0x0d => GetKQ,
            0x0e => Append,
            0x0f => Prepend,
            0x10 => Stat,
            0x11 => SetQ,
            0x12 => AddQ,
            0x13 => ReplaceQ,
            0x14 => DeleteQ,
            0x15 => IncrementQ,
            0x16 => DecrementQ,
            0x17 => QuitQ,
            0x18 => FlushQ,
            0x19 => AppendQ,
            0x1a => PrependQ,
            0x1b => Verbosity,
            0x1c => Touch,
            0x1d => Gat,
            0x1e => GatQ,
            0x20 => SaslListMechs,
            0x21 => SaslAuth,
            0x22 => SaslStep,
            0x23 => GatK,
            0x24 => GatKQ,
            _ => return None,
        })
    }

    /// The loud opcode of a quiet one, and whether it was quiet.
    pub fn loud(self) -> (Opcode, bool) {
        use Opcode::*;
        match self {
            GetQ => (Get, true),
            GetKQ => (GetK, true),
            SetQ => (Set, true),
            AddQ => (Add, true),
            ReplaceQ => (Replace, true),
            DeleteQ => (Delete, true),
            IncrementQ => (Increment, true),
            DecrementQ => (Decrement, true),
            QuitQ => (Quit, true),
            FlushQ => (Flush, true),
            AppendQ => (Append, true),
            PrependQ => (Prepend, true),
            GatQ => (Gat, true),
            GatKQ => (GatK, true),
            other => (other, false),
        }
    }
}

/// Response status codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u16)]
pub enum Status {
    NoError = 0x0000,
    KeyNotFound = 0x0001,
    KeyExists = 0x0002,
    TooLarge = 0x0003,
    InvalidArguments = 0x0004,
    NotStored = 0x0005,
    NonNumeric = 0x0006,
    AuthError = 0x0020,
    AuthContinue = 0x0021,
    UnknownCommand = 0x0081,
    OutOfMemory = 0x0082,
}

impl Status {
    /// The body memcached sends with an error status.
    pub fn message(self) -> &'static str {
        match self {
            Status::NoError => "",
            Status::KeyNotFound => "Not found",
            Status::KeyExists => "Data exists for key.",
            Status::TooLarge => "Too large.",
            Status::InvalidArguments => "Invalid arguments",
            Status::NotStored => "Not stored.",
            Status::NonNumeric => "Non-numeric server-side value for incr or decr",
            Status::AuthError => "Auth failure.",
            Status::AuthContinue => "",
            Status::UnknownCommand => "Unknown command",
            Status::OutOfMemory => "Out of memory",
        }
    }
}

/// A request header, host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RequestHeader {
    pub magic: u8,
    pub opcode: u8,
    pub key_len: u16,
    pub extras_len: u8,
    pub data_type: u8,
    pub vbucket: u16,
    pub body_len: u32,
    pub opaque: u32,
    pub cas: u64,
}

impl RequestHeader {
    /// Reads the first 24 bytes of `buf` (None if fewer).
    pub fn parse(buf: &[u8]) -> Option<RequestHeader> {
        let h: &[u8; HEADER_LEN] = buf.get(..HEADER_LEN)?.try_into().ok()?;
        Some(RequestHeader {
            magic: h[0],
            opcode: h[1],
            key_len: u16::from_be_bytes([h[2], h[3]]),
            extras_len: h[4],
            data_type: h[5],
            vbucket: u16::from_be_bytes([h[6], h[7]]),
            body_len: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
            opaque: u32::from_be_bytes([h[12], h[13], h[14], h[15]]),
            cas: u64::from_be_bytes([h[16], h[17], h[18], h[19], h[20], h[21], h[22], h[23]]),
        })
    }

    /// Appends the header (a client's side; the tests use it).
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(self.magic);
        out.push(self.opcode);
        out.extend_from_slice(&self.key_len.to_be_bytes());
        out.push(self.extras_len);
        out.push(self.data_type);
        out.extend_from_slice(&self.vbucket.to_be_bytes());
        out.extend_from_slice(&self.body_len.to_be_bytes());
        out.extend_from_slice(&self.opaque.to_be_bytes());
        out.extend_from_slice(&self.cas.to_be_bytes());
    }
}

/// How a binary storage command stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryStore {
    Set,
    Add,
    Replace,
    Append,
    Prepend,
}

/// A parsed binary request body. `quiet` marks the Q opcodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinaryCommand<'a> {
    /// Get/GetK (and their Q forms): `return_key` for the K forms.
    Get {
        key: &'a [u8],
        return_key: bool,
        quiet: bool,
    },
    /// Gat/GatK (and Q forms).
    GetAndTouch {
        key: &'a [u8],
        exptime: u32,
        return_key: bool,
        quiet: bool,
    },
    Touch {
        key: &'a [u8],
        exptime: u32,
    },
    /// Set/Add/Replace carry flags and expiry; a non-zero header cas makes
    /// them compare-and-set. Append/Prepend carry neither.
    Store {
        mode: BinaryStore,
        key: &'a [u8],
        client_flags: u32,
        exptime: u32,
        value: &'a [u8],
        quiet: bool,
    },
    Delete {
        key: &'a [u8],
        quiet: bool,
    },
    /// Increment/Decrement: an expiry of 0xffffffff means "do not create".
    Arithmetic {
        key: &'a [u8],
        increment: bool,
        delta: u64,
        initial: u64,
        exptime: u32,
        quiet: bool,
    },
    Quit {
        quiet: bool,
    },
    Flush {
        delay: u32,
        quiet: bool,
    },
    Noop,
    Version,
    /// Stat with an optional group name in the key.
    Stat {
        group: &'a [u8],
    },
    SaslListMechs,
    SaslAuth {
        mechanism: &'a [u8],
        data: &'a [u8],
    },
    SaslStep {
        mechanism: &'a [u8],
        data: &'a [u8],
    },
}

/// A binary request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BinaryRequest<'a> {
    pub header: RequestHeader,
    pub command: BinaryCommand<'a>,
}

/// A refused binary request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BinaryError {
    /// None: close without answering (wrong magic).
    pub status: Option<Status>,
    pub header: RequestHeader,
    pub close: bool,
}

impl BinaryError {
    /// Appends the error response (nothing for a wrong magic).
    pub fn encode(&self, out: &mut Vec<u8>) {
        if let Some(status) = self.status {
            write_error(out, self.header.opcode, self.header.opaque, status);
        }
    }
}

/// What the start of a buffer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BinaryFrame<'a> {
    Incomplete,
    Request {
        request: BinaryRequest<'a>,
        consumed: usize,
    },
    /// Answer `error`, drop `consumed` bytes and then `swallow` more.
    Error {
        error: BinaryError,
        consumed: usize,
        swallow: usize,
    },
}
