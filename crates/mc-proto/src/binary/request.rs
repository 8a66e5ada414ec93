//! `parse_binary`: memcached's checks on a request header, in its order,
//! then the body.

use super::{
    BinaryCommand, BinaryError, BinaryFrame, BinaryRequest, BinaryStore, Opcode, RequestHeader,
    Status, HEADER_LEN, REQUEST_MAGIC,
};

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
    parse_binary_gated(buf, max_item_size, false)
}

/// `parse_binary` on a connection that must authenticate first when
/// `auth_required`: a request other than the SASL ones and Version is
/// answered "Auth failure." and closes the connection, as memcached `-S`
/// does once the request's extras and key are in (before it looks at their
/// lengths or the opcode).
pub fn parse_binary_gated(
    buf: &[u8],
    max_item_size: usize,
    auth_required: bool,
) -> BinaryFrame<'_> {
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
    if auth_required && !super::sasl::allowed_before_auth(header.opcode) {
        return refuse(Some(Status::AuthError), true, head_len, 0);
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
