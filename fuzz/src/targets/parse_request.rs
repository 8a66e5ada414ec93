//! The parse_request target: hs-proto on arbitrary bytes. The parser never
//! panics; a parsed request re-encodes to a line that parses to the same
//! request; the token codec round-trips any bytes without emitting framing
//! bytes; and a response written by `ResponseWriter` parses back to what was
//! written.

use crate::encode::encode_request;
use crate::show;
use hs_proto::{decode_token, encode_token, parse_request, ErrorKind, Response, ResponseWriter};

/// Checks one input; panics on any broken invariant.
pub fn run(data: &[u8]) {
    request_roundtrip(data);
    token_roundtrip(data);
    response_roundtrip(data);
}

fn request_roundtrip(line: &[u8]) {
    let Ok(req) = parse_request(line) else {
        return;
    };
    let Some(encoded) = encode_request(&req) else {
        return;
    };
    let again = parse_request(&encoded)
        .unwrap_or_else(|e| panic!("re-encoded {:?} fails: {e:?}", show(&encoded)));
    assert_eq!(
        again,
        req,
        "line {:?} re-encoded {:?}",
        show(line),
        show(&encoded)
    );
}

fn token_roundtrip(data: &[u8]) {
    let mut wire = Vec::new();
    encode_token(Some(data), &mut wire);
    assert!(
        !wire.iter().any(|b| matches!(b, b'\t' | b'\n' | b'\r')),
        "framing byte in an encoded token"
    );
    assert_eq!(decode_token(&wire).as_deref(), Some(data));
    // Lenient decoding of garbage never fails and never grows the token.
    let decoded = decode_token(data);
    assert!(decoded.map_or(0, |d| d.len()) <= data.len());
}

fn response_roundtrip(data: &[u8]) {
    // Values: the data split on 0xfe; a piece equal to [0xff] stands for NULL.
    let values: Vec<Option<&[u8]>> = data
        .split(|&b| b == 0xfe)
        .map(|v| (v != [0xff]).then_some(v))
        .collect();
    let ncols = 1 + usize::from(data.first().copied().unwrap_or(0) % 4);
    let rows = values.len() / ncols;
    let mut w = ResponseWriter::new();
    w.begin_ok(ncols);
    for v in &values[..rows * ncols] {
        w.value(*v);
    }
    w.end();
    let bytes = w.as_bytes();
    assert_eq!(memchr::memchr_iter(b'\n', bytes).count(), 1);
    let r = Response::parse(&bytes[..bytes.len() - 1]).expect("own response parses");
    assert_eq!((r.code, r.ncols), (0, ncols));
    let want: Vec<Option<Vec<u8>>> = values[..rows * ncols]
        .iter()
        .map(|v| v.map(<[u8]>::to_vec))
        .collect();
    assert_eq!(r.values, want);
    crate::assert_response_shape(&bytes[..bytes.len() - 1]);

    let kind = match data.last().copied().unwrap_or(0) % 5 {
        0 => ErrorKind::Cmd,
        1 => ErrorKind::OpenTable,
        2 => ErrorKind::Unauth,
        3 => ErrorKind::FilterBlob,
        _ => ErrorKind::Storage(u32::from_le_bytes([
            data.first().copied().unwrap_or(0),
            data.get(1).copied().unwrap_or(0),
            0,
            0,
        ])),
    };
    let mut w = ResponseWriter::new();
    w.error(kind);
    let bytes = w.as_bytes();
    let r = Response::parse(&bytes[..bytes.len() - 1]).expect("error line parses");
    assert_eq!((r.code, r.ncols), (u32::from(kind.code()), 1));
    let reason = match kind {
        ErrorKind::Storage(n) => n.to_string(),
        other => other.reason().to_string(),
    };
    assert_eq!(r.reason(), Some(reason));
}
