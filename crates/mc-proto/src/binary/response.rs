//! Binary responses: a 24-byte header, then extras, key and value.

use std::io::Write;

use super::{RequestHeader, Status, RESPONSE_MAGIC};

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
