//! Length-encoded integers and strings, the protocol's variable-size numbers.

/// Appends `n` as a length-encoded integer.
pub fn put_lenenc(out: &mut Vec<u8>, n: u64) {
    match n {
        0..=250 => out.push(n as u8),
        251..=0xffff => {
            out.push(0xfc);
            out.extend_from_slice(&(n as u16).to_le_bytes());
        }
        0x1_0000..=0xff_ffff => {
            out.push(0xfd);
            out.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
        }
        _ => {
            out.push(0xfe);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
}

/// Reads a length-encoded integer at `pos`: (value, position after it).
/// `None` when the bytes end early or start with 0xfb (NULL) or 0xff.
pub fn get_lenenc(b: &[u8], pos: usize) -> Option<(u64, usize)> {
    let first = *b.get(pos)?;
    let width = match first {
        0..=250 => return Some((u64::from(first), pos + 1)),
        0xfc => 2,
        0xfd => 3,
        0xfe => 8,
        _ => return None,
    };
    let bytes = b.get(pos + 1..pos + 1 + width)?;
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(bytes);
    Some((u64::from_le_bytes(v), pos + 1 + width))
}

/// Reads a length-encoded string at `pos`: (its byte range, position after it).
pub fn get_lenenc_str(b: &[u8], pos: usize) -> Option<(std::ops::Range<usize>, usize)> {
    let (len, start) = get_lenenc(b, pos)?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    if end > b.len() {
        return None;
    }
    Some((start..end, end))
}

/// A little-endian integer of `width` bytes at `pos`.
pub fn get_le(b: &[u8], pos: usize, width: usize) -> Option<u64> {
    let bytes = b.get(pos..pos + width)?;
    let mut v = [0u8; 8];
    v[..width].copy_from_slice(bytes);
    Some(u64::from_le_bytes(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenenc_roundtrip() {
        for n in [
            0u64,
            250,
            251,
            65535,
            65536,
            0xff_ffff,
            0x100_0000,
            u64::MAX,
        ] {
            let mut v = vec![9];
            put_lenenc(&mut v, n);
            assert_eq!(get_lenenc(&v, 1), Some((n, v.len())), "{n}");
        }
        assert_eq!(get_lenenc(&[0xfb], 0), None, "NULL is not a number");
        assert_eq!(get_lenenc(&[0xfc, 1], 0), None, "cut short");
    }

    #[test]
    fn lenenc_strings() {
        let b = [3, b'a', b'b', b'c', 0];
        assert_eq!(get_lenenc_str(&b, 0), Some((1..4, 4)));
        assert_eq!(get_lenenc_str(&b, 4), Some((5..5, 5)));
        assert_eq!(get_lenenc_str(&[5, b'a'], 0), None);
    }
}
