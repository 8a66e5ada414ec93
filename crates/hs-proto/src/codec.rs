//! Token encoding (section 1 of the spec): bytes 0x00..0x0f travel as 0x01 followed
//! by byte+0x40, a lone 0x00 token is NULL, tokens are separated by HT.

/// A protocol value: `None` is SQL NULL, `Some(bytes)` a (possibly empty) string.
pub type Value = Option<Vec<u8>>;

const NULL_TOKEN: u8 = 0x00;
const ESCAPE: u8 = 0x01;
const SHIFT: u8 = 0x40;

/// Decodes one raw token. A token that is exactly the single byte 0x00 is NULL.
///
/// Decoding is lenient, as the original server's was: a value ends at an
/// escape byte that is the token's last byte or is followed by a byte below
/// 0x40 (`a\x01\x05b` is `a`). Garbage in never fails; it only decodes short.
pub fn decode_token(raw: &[u8]) -> Value {
    if raw == [NULL_TOKEN] {
        return None;
    }
    Some(unescape(raw))
}

/// The bytes a raw token stands for, with no NULL rule (IN values).
pub fn unescape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    decode_into(raw, &mut out);
    out
}

/// Appends the decoded bytes of `raw` to `out` (no NULL handling).
pub fn decode_into(raw: &[u8], out: &mut Vec<u8>) {
    if !raw.contains(&ESCAPE) {
        out.extend_from_slice(raw);
        return;
    }
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b == ESCAPE {
            match raw.get(i + 1) {
                Some(&next) if next >= SHIFT => out.push(next - SHIFT),
                _ => return,
            }
            i += 2;
        } else {
            out.push(b);
            i += 1;
        }
    }
}

/// Appends the wire form of a value to `out`: NULL as 0x00, bytes escaped.
pub fn encode_token(value: Option<&[u8]>, out: &mut Vec<u8>) {
    match value {
        None => out.push(NULL_TOKEN),
        Some(bytes) => encode_bytes(bytes, out),
    }
}

/// Appends `bytes` escaped. Hot path of every response: copies runs of plain
/// bytes in one go and only steps byte by byte around the rare control bytes.
pub fn encode_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if b < 0x10 {
            out.extend_from_slice(&bytes[start..i]);
            out.push(ESCAPE);
            out.push(b + SHIFT);
            start = i + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(v: Option<&[u8]>) -> Value {
        let mut wire = Vec::new();
        encode_token(v, &mut wire);
        assert!(
            !wire.contains(&b'\t') && !wire.contains(&b'\n') && !wire.contains(&b'\r'),
            "encoded token must not contain framing bytes: {wire:?}"
        );
        decode_token(&wire)
    }

    #[test]
    fn every_single_byte_roundtrips() {
        for b in 0u8..=255 {
            let v = [b];
            assert_eq!(roundtrip(Some(&v)), Some(vec![b]), "byte {b:#04x}");
        }
    }

    #[test]
    fn all_bytes_in_one_value_roundtrip() {
        let all: Vec<u8> = (0u8..=255).chain((0u8..=255).rev()).collect();
        assert_eq!(roundtrip(Some(&all)), Some(all.clone()));
    }

    #[test]
    fn null_and_empty_stay_distinct() {
        assert_eq!(roundtrip(None), None);
        assert_eq!(roundtrip(Some(b"")), Some(Vec::new()));
        let mut wire = Vec::new();
        encode_token(Some(&[0u8]), &mut wire);
        assert_eq!(
            wire,
            vec![0x01, 0x40],
            "a 0x00 byte value is escaped, not NULL"
        );
    }

    #[test]
    fn control_bytes_use_the_spec_escape() {
        let mut wire = Vec::new();
        encode_bytes(&[0x09, b'a', 0x0a], &mut wire);
        assert_eq!(wire, vec![0x01, 0x49, b'a', 0x01, 0x4a]);
    }

    #[test]
    fn lenient_decoding_never_fails() {
        assert_eq!(decode_token(&[b'a', ESCAPE]), Some(b"a".to_vec()));
        // A bad escape ends the value (verified against the original).
        assert_eq!(decode_token(&[ESCAPE, 0x00]), Some(vec![]));
        assert_eq!(decode_token(b"a\x01\x05bc"), Some(b"a".to_vec()));
        assert_eq!(decode_token(b"a\x01\x41b"), Some(b"a\x01b".to_vec()));
    }
}
