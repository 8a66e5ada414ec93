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

use std::io::Write;

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

fn be_u32(bytes: &[u8]) -> u32 {
    bytes
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_be_bytes)
}

fn be_u64(bytes: &[u8]) -> u64 {
    bytes
        .get(..8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_be_bytes)
}

/// Parses the binary request at the start of `buf`; `max_item_size` bounds
/// the values of storage commands.
pub fn parse_binary(buf: &[u8], max_item_size: usize) -> BinaryFrame<'_> {
    let Some(header) = RequestHeader::parse(buf) else {
        return BinaryFrame::Incomplete;
    };
    let refuse =
        |status: Option<Status>, close: bool, consumed: usize, swallow: usize| BinaryFrame::Error {
            error: BinaryError {
                status,
                header,
                close,
            },
            consumed,
            swallow,
        };
    if header.magic != REQUEST_MAGIC {
        return refuse(None, true, buf.len(), 0);
    }
    let extras_len = usize::from(header.extras_len);
    let key_len = usize::from(header.key_len);
    let body_len = header.body_len as usize;
    let head_len = HEADER_LEN + extras_len + key_len;
    if buf.len() < head_len {
        return BinaryFrame::Incomplete;
    }
    if key_len > body_len || key_len + extras_len > body_len {
        return refuse(Some(Status::UnknownCommand), true, head_len, 0);
    }
    if key_len > crate::text::MAX_KEY_LEN {
        return refuse(Some(Status::InvalidArguments), true, head_len, 0);
    }
    let value_len = body_len - key_len - extras_len;
    let extras = &buf[HEADER_LEN..HEADER_LEN + extras_len];
    let key = &buf[HEADER_LEN + extras_len..head_len];
    let Some(opcode) = Opcode::from_u8(header.opcode).filter(|&o| o != Opcode::Verbosity) else {
        return refuse(Some(Status::UnknownCommand), false, head_len, value_len);
    };
    let (loud, quiet) = opcode.loud();
    let (ext, keyed) = (extras_len, key_len > 0);
    let no_body = ext == 0 && key_len == 0 && body_len == 0;
    // The shape memcached requires of each opcode; a wrong one closes.
    let shape_ok = match loud {
        Opcode::Version | Opcode::Noop | Opcode::Quit | Opcode::SaslListMechs => no_body,
        Opcode::Flush => key_len == 0 && body_len == ext && (ext == 0 || ext == 4),
        Opcode::Set | Opcode::Add | Opcode::Replace => ext == 8 && keyed,
        Opcode::Get | Opcode::GetK => ext == 0 && keyed && body_len == key_len,
        Opcode::Delete => keyed && ext == 0 && body_len == key_len,
        Opcode::Increment | Opcode::Decrement => keyed && ext == 20 && body_len == key_len + ext,
        Opcode::Append | Opcode::Prepend => keyed && ext == 0,
        Opcode::Stat => ext == 0,
        Opcode::SaslAuth | Opcode::SaslStep => ext == 0 && keyed,
        Opcode::Touch | Opcode::Gat | Opcode::GatK => ext == 4 && keyed,
        _ => false,
    };
    if !shape_ok {
        return refuse(Some(Status::InvalidArguments), true, head_len, 0);
    }
    // Only these read a value; the others end at their key, as in memcached.
    let reads_value = matches!(
        loud,
        Opcode::Set
            | Opcode::Add
            | Opcode::Replace
            | Opcode::Append
            | Opcode::Prepend
            | Opcode::SaslAuth
            | Opcode::SaslStep
    );
    let mut consumed = head_len;
    let mut value: &[u8] = &[];
    if reads_value {
        if value_len > max_item_size {
            return refuse(Some(Status::TooLarge), false, head_len, value_len);
        }
        consumed = head_len + value_len;
        if buf.len() < consumed {
            return BinaryFrame::Incomplete;
        }
        value = &buf[head_len..consumed];
    }
    let command = match loud {
        Opcode::Get | Opcode::GetK => BinaryCommand::Get {
            key,
            return_key: loud == Opcode::GetK,
            quiet,
        },
        Opcode::Gat | Opcode::GatK => BinaryCommand::GetAndTouch {
            key,
            exptime: be_u32(extras),
            return_key: loud == Opcode::GatK,
            quiet,
        },
        Opcode::Touch => BinaryCommand::Touch {
            key,
            exptime: be_u32(extras),
        },
        Opcode::Set | Opcode::Add | Opcode::Replace | Opcode::Append | Opcode::Prepend => {
            let mode = match loud {
                Opcode::Set => BinaryStore::Set,
                Opcode::Add => BinaryStore::Add,
                Opcode::Replace => BinaryStore::Replace,
                Opcode::Append => BinaryStore::Append,
                _ => BinaryStore::Prepend,
            };
            BinaryCommand::Store {
                mode,
                key,
                client_flags: be_u32(extras),
                exptime: extras.get(4..).map_or(0, be_u32),
                value,
                quiet,
            }
        }
        Opcode::Delete => BinaryCommand::Delete { key, quiet },
        Opcode::Increment | Opcode::Decrement => BinaryCommand::Arithmetic {
            key,
            increment: loud == Opcode::Increment,
            delta: be_u64(extras),
            initial: extras.get(8..).map_or(0, be_u64),
            exptime: extras.get(16..).map_or(0, be_u32),
            quiet,
        },
        Opcode::Quit => BinaryCommand::Quit { quiet },
        Opcode::Flush => BinaryCommand::Flush {
            delay: be_u32(extras),
            quiet,
        },
        Opcode::Noop => BinaryCommand::Noop,
        Opcode::Version => BinaryCommand::Version,
        Opcode::Stat => BinaryCommand::Stat { group: key },
        Opcode::SaslListMechs => BinaryCommand::SaslListMechs,
        Opcode::SaslAuth => BinaryCommand::SaslAuth {
            mechanism: key,
            data: value,
        },
        _ => BinaryCommand::SaslStep {
            mechanism: key,
            data: value,
        },
    };
    BinaryFrame::Request {
        request: BinaryRequest { header, command },
        consumed,
    }
}

/// Whether a quiet request leaves this answer out: quiet gets leave out
/// misses, the other quiet commands their successes; errors are sent.
pub fn suppressed(command: &BinaryCommand<'_>, status: Status) -> bool {
    match command {
        BinaryCommand::Get { quiet, .. } | BinaryCommand::GetAndTouch { quiet, .. } => {
            *quiet && status == Status::KeyNotFound
        }
        BinaryCommand::Store { quiet, .. }
        | BinaryCommand::Delete { quiet, .. }
        | BinaryCommand::Arithmetic { quiet, .. }
        | BinaryCommand::Quit { quiet }
        | BinaryCommand::Flush { quiet, .. } => *quiet && status == Status::NoError,
        _ => false,
    }
}

/// The fields of a response besides its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResponseHeader {
    /// The request's opcode, quiet or not, as received.
    pub opcode: u8,
    pub status: Status,
    pub opaque: u32,
    pub cas: u64,
}

/// Appends a response: header, then extras, key and value.
pub fn write_response(
    out: &mut Vec<u8>,
    header: ResponseHeader,
    extras: &[u8],
    key: &[u8],
    value: &[u8],
) {
    // Lengths are bounded by the request's (a key of at most 250 bytes, a
    // value of at most the item size), so the casts cannot truncate.
    let body_len = (extras.len() + key.len() + value.len()) as u32;
    out.push(RESPONSE_MAGIC);
    out.push(header.opcode);
    out.extend_from_slice(&(key.len() as u16).to_be_bytes());
    out.push(extras.len() as u8);
    out.push(0);
    out.extend_from_slice(&(header.status as u16).to_be_bytes());
    out.extend_from_slice(&body_len.to_be_bytes());
    out.extend_from_slice(&header.opaque.to_be_bytes());
    out.extend_from_slice(&header.cas.to_be_bytes());
    out.extend_from_slice(extras);
    out.extend_from_slice(key);
    out.extend_from_slice(value);
}

/// Appends an error response with memcached's message as its body.
pub fn write_error(out: &mut Vec<u8>, opcode: u8, opaque: u32, status: Status) {
    let header = ResponseHeader {
        opcode,
        status,
        opaque,
        cas: 0,
    };
    write_response(out, header, &[], &[], status.message().as_bytes());
}

/// A get hit: 4 bytes of client flags as extras, the key for GetK/GatK.
pub fn write_get_hit(
    out: &mut Vec<u8>,
    request: &RequestHeader,
    cas: u64,
    client_flags: u32,
    key: &[u8],
    value: &[u8],
) {
    let header = ResponseHeader {
        opcode: request.opcode,
        status: Status::NoError,
        opaque: request.opaque,
        cas,
    };
    write_response(out, header, &client_flags.to_be_bytes(), key, value);
}

/// An incr/decr success: the new value as 8 bytes.
pub fn write_counter(out: &mut Vec<u8>, request: &RequestHeader, cas: u64, value: u64) {
    let header = ResponseHeader {
        opcode: request.opcode,
        status: Status::NoError,
        opaque: request.opaque,
        cas,
    };
    write_response(out, header, &[], &[], &value.to_be_bytes());
}

/// One stat of a Stat answer (key = name, value = value); an empty one ends it.
pub fn write_stat(
    out: &mut Vec<u8>,
    request: &RequestHeader,
    name: &str,
    value: impl std::fmt::Display,
) {
    let mut text = Vec::new();
    let _ = write!(text, "{value}");
    let header = ResponseHeader {
        opcode: request.opcode,
        status: Status::NoError,
        opaque: request.opaque,
        cas: 0,
    };
    write_response(out, header, &[], name.as_bytes(), &text);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(opcode: u8, extras: &[u8], key: &[u8], value: &[u8]) -> Vec<u8> {
        let header = RequestHeader {
            magic: REQUEST_MAGIC,
            opcode,
            key_len: key.len() as u16,
            extras_len: extras.len() as u8,
            data_type: 0,
            vbucket: 0,
            body_len: (extras.len() + key.len() + value.len()) as u32,
            opaque: 0xdead_beef,
            cas: 0,
        };
        let mut out = Vec::new();
        header.encode(&mut out);
        out.extend_from_slice(extras);
        out.extend_from_slice(key);
        out.extend_from_slice(value);
        out
    }

    fn command(buf: &[u8]) -> (BinaryCommand<'_>, usize) {
        match parse_binary(buf, 1 << 20) {
            BinaryFrame::Request { request, consumed } => (request.command, consumed),
            other => panic!("not a request: {other:?}"),
        }
    }

    fn error(buf: &[u8]) -> (Option<Status>, bool, usize, usize) {
        match parse_binary(buf, 1 << 20) {
            BinaryFrame::Error {
                error,
                consumed,
                swallow,
            } => (error.status, error.close, consumed, swallow),
            other => panic!("not an error: {other:?}"),
        }
    }

    #[test]
    fn opcodes_and_quiet_forms() {
        for byte in 0..=0x30u8 {
            if let Some(op) = Opcode::from_u8(byte) {
                assert_eq!(op as u8, byte);
            }
        }
        let buf = request(0x09, &[], b"k", &[]);
        assert_eq!(
            command(&buf),
            (
                BinaryCommand::Get {
                    key: b"k",
                    return_key: false,
                    quiet: true
                },
                25
            )
        );
        let buf = request(0x0d, &[], b"k", &[]);
        assert_eq!(
            command(&buf).0,
            BinaryCommand::Get {
                key: b"k",
                return_key: true,
                quiet: true
            }
        );
        let mut extras = 5u32.to_be_bytes().to_vec();
        extras.extend_from_slice(&60u32.to_be_bytes());
        let buf = request(0x11, &extras, b"k", b"val");
        assert_eq!(
            command(&buf),
            (
                BinaryCommand::Store {
                    mode: BinaryStore::Set,
                    key: b"k",
                    client_flags: 5,
                    exptime: 60,
                    value: b"val",
                    quiet: true
                },
                24 + 8 + 1 + 3
            )
        );
        let mut extras = 7u64.to_be_bytes().to_vec();
        extras.extend_from_slice(&1u64.to_be_bytes());
        extras.extend_from_slice(&u32::MAX.to_be_bytes());
        let buf = request(0x06, &extras, b"n", &[]);
        assert_eq!(
            command(&buf).0,
            BinaryCommand::Arithmetic {
                key: b"n",
                increment: false,
                delta: 7,
                initial: 1,
                exptime: u32::MAX,
                quiet: false
            }
        );
        let buf = request(0x21, &[], b"PLAIN", b"\0user\0pass");
        assert_eq!(
            command(&buf).0,
            BinaryCommand::SaslAuth {
                mechanism: b"PLAIN",
                data: b"\0user\0pass"
            }
        );
        assert_eq!(
            command(&request(0x20, &[], &[], &[])).0,
            BinaryCommand::SaslListMechs
        );
        assert_eq!(
            command(&request(0x0a, &[], &[], &[])).0,
            BinaryCommand::Noop
        );
        assert_eq!(
            command(&request(0x18, &[0, 0, 0, 9], &[], &[])).0,
            BinaryCommand::Flush {
                delay: 9,
                quiet: true
            }
        );
        assert_eq!(
            command(&request(0x10, &[], b"items", &[])).0,
            BinaryCommand::Stat { group: b"items" }
        );
        assert_eq!(
            command(&request(0x1e, &[0, 0, 0, 1], b"k", &[])).0,
            BinaryCommand::GetAndTouch {
                key: b"k",
                exptime: 1,
                return_key: false,
                quiet: true
            }
        );
    }

    #[test]
    fn incomplete_until_the_value_is_in() {
        let buf = request(0x01, &[0; 8], b"k", b"value");
        for cut in 0..buf.len() {
            assert_eq!(
                parse_binary(&buf[..cut], 1 << 20),
                BinaryFrame::Incomplete,
                "{cut}"
            );
        }
    }

    #[test]
    fn errors_as_memcached() {
        let mut bad_magic = request(0x00, &[], b"k", &[]);
        bad_magic[0] = 0x81;
        assert_eq!(error(&bad_magic).0, None);
        assert!(error(&bad_magic).1);
        // Unknown opcode: answered, body skipped, connection kept.
        let buf = request(0x40, &[], b"k", b"xyz");
        assert_eq!(error(&buf), (Some(Status::UnknownCommand), false, 25, 3));
        // Verbosity is unknown to memcached 1.6 as well.
        assert_eq!(
            error(&request(0x1b, &[0; 4], &[], &[])).0,
            Some(Status::UnknownCommand)
        );
        // Key longer than the body: closes.
        let mut buf = request(0x00, &[], b"k", &[]);
        buf[11] = 0;
        assert_eq!(error(&buf), (Some(Status::UnknownCommand), true, 25, 0));
        // Wrong shapes close.
        assert_eq!(
            error(&request(0x0b, &[], b"k", &[])).0,
            Some(Status::InvalidArguments)
        );
        assert!(error(&request(0x00, &[], &[], &[])).1);
        assert_eq!(
            error(&request(0x01, &[0; 4], b"k", b"v")).0,
            Some(Status::InvalidArguments)
        );
        assert_eq!(
            error(&request(0x05, &[0; 8], b"k", &[])).0,
            Some(Status::InvalidArguments)
        );
        let long_key = vec![b'k'; 251];
        assert_eq!(
            error(&request(0x00, &[], &long_key, &[])),
            (Some(Status::InvalidArguments), true, 24 + 251, 0)
        );
        // Too large: answered, value skipped, connection kept.
        let header_only = request(0x01, &[0; 8], b"k", &[]);
        let mut big = header_only.clone();
        big[8..12].copy_from_slice(&(9 + (2u32 << 20)).to_be_bytes());
        assert_eq!(error(&big), (Some(Status::TooLarge), false, 33, 2 << 20));
    }

    #[test]
    fn responses() {
        let mut out = Vec::new();
        write_error(&mut out, 0x09, 7, Status::KeyNotFound);
        assert_eq!(out[0], RESPONSE_MAGIC);
        assert_eq!(out[1], 0x09);
        assert_eq!(&out[6..8], &[0, 1]);
        assert_eq!(&out[8..12], &9u32.to_be_bytes());
        assert_eq!(&out[12..16], &7u32.to_be_bytes());
        assert_eq!(&out[24..], b"Not found");
        let header = RequestHeader::parse(&request(0x0c, &[], b"key", &[])).unwrap();
        out.clear();
        write_get_hit(&mut out, &header, 99, 5, b"key", b"val");
        assert_eq!(&out[2..4], &3u16.to_be_bytes());
        assert_eq!(out[4], 4);
        assert_eq!(&out[8..12], &10u32.to_be_bytes());
        assert_eq!(&out[16..24], &99u64.to_be_bytes());
        assert_eq!(&out[24..], b"\0\0\0\x05keyval");
        out.clear();
        write_counter(&mut out, &header, 1, 42);
        assert_eq!(&out[24..], &42u64.to_be_bytes());
        out.clear();
        write_stat(&mut out, &header, "pid", 12);
        assert_eq!(&out[24..], b"pid12");
        let get_q = BinaryCommand::Get {
            key: b"k",
            return_key: false,
            quiet: true,
        };
        assert!(suppressed(&get_q, Status::KeyNotFound));
        assert!(!suppressed(&get_q, Status::NoError));
        let set_q = BinaryCommand::Delete {
            key: b"k",
            quiet: true,
        };
        assert!(suppressed(&set_q, Status::NoError));
        assert!(!suppressed(&set_q, Status::KeyNotFound));
    }
}
