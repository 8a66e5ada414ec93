//! Numbers as memcached reads them.
//!
//! memcached parses every numeric token with the C library's `strtoul` /
//! `strtol` wrapped in its `safe_strto*` helpers, and clients depend on the
//! result: leading white space and a sign are accepted, a 64-bit value given
//! for a 32-bit field is truncated rather than refused, and `-` is refused for
//! unsigned fields only when the negated value would look negative. These
//! functions reproduce those rules on a token (a run of bytes without spaces)
//! so that hsd accepts and refuses exactly the lines memcached does.

/// The C locale's `isspace`.
fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `strtoull(token, &end, 10)` followed by memcached's end check: returns the
/// value (negated modulo 2^64 when a `-` was given) and whether a `-` was
/// given; `None` for no digits, overflow, or a trailing non-space byte.
fn c_strtoull(token: &[u8]) -> Option<(u64, bool)> {
    let mut at = 0;
    while at < token.len() && is_c_space(token[at]) {
        at += 1;
    }
    let mut negative = false;
    if at < token.len() && (token[at] == b'+' || token[at] == b'-') {
        negative = token[at] == b'-';
        at += 1;
    }
    let digits_start = at;
    let mut value: u64 = 0;
    let mut overflow = false;
    while at < token.len() && token[at].is_ascii_digit() {
        let digit = u64::from(token[at] - b'0');
        match value.checked_mul(10).and_then(|v| v.checked_add(digit)) {
            Some(v) => value = v,
            None => overflow = true,
        }
        at += 1;
    }
    if at == digits_start || overflow {
        return None;
    }
    if at < token.len() && !is_c_space(token[at]) {
        return None;
    }
    Some((
        if negative {
            value.wrapping_neg()
        } else {
            value
        },
        negative,
    ))
}

/// memcached's `safe_strtoull`: an unsigned 64-bit number.
pub fn parse_u64(token: &[u8]) -> Option<u64> {
    let (value, negative) = c_strtoull(token)?;
    // A `-` is refused only when the result is "negative" as a signed
    // number: `-0` is 0 and `-18446744073709551615` is 1, as in memcached.
    if negative && (value as i64) < 0 {
        return None;
    }
    Some(value)
}

/// What memcached stores after `incr`/`decr` made `value` of an item
/// `old_len` bytes long: the digits, padded with spaces to the old length
/// when they are not longer (memcached rewrites the item in place: `100`
/// decremented is `99 `, `18446744073709551615` incremented is `0` and 19
/// spaces); longer digits make a new item of their own length. The
/// command answers the digits alone. (An item's value is read back by
/// `parse_u64`, which takes the trailing spaces.)
pub fn counter_text(value: u64, old_len: usize) -> Vec<u8> {
    let mut text = value.to_string().into_bytes();
    if text.len() < old_len {
        text.resize(old_len, b' ');
    }
    text
}

/// memcached's `safe_strtoul` on a 64-bit system: parsed as 64 bits, then
/// truncated to the 32-bit field (client flags 4294967296 store 0).
pub fn parse_u32(token: &[u8]) -> Option<u32> {
    parse_u64(token).map(|value| value as u32)
}

/// memcached's `safe_strtol` on a 64-bit system: a signed 64-bit `strtol`
/// (out of range is refused), then truncated to the 32-bit field.
pub fn parse_i32(token: &[u8]) -> Option<i32> {
    let (value, negative) = c_strtoull(token)?;
    // strtol's range: [-2^63, 2^63 - 1]; the magnitude decides.
    let magnitude = if negative {
        value.wrapping_neg()
    } else {
        value
    };
    let in_range = if negative {
        magnitude <= 1u64 << 63
    } else {
        magnitude < 1u64 << 63
    };
    if !in_range {
        return None;
    }
    Some(value as i64 as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsigned_64() {
        assert_eq!(parse_u64(b"0"), Some(0));
        assert_eq!(parse_u64(b"+5"), Some(5));
        assert_eq!(parse_u64(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), None);
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"-0"), Some(0));
        assert_eq!(parse_u64(b"-18446744073709551615"), Some(1));
        assert_eq!(parse_u64(b"0x10"), None);
        assert_eq!(parse_u64(b"1x"), None);
        assert_eq!(parse_u64(b""), None);
        assert_eq!(parse_u64(b"-"), None);
        assert_eq!(parse_u64(b"\t7"), Some(7));
        assert_eq!(parse_u64(b"7\t"), Some(7));
        assert_eq!(parse_u64(b"7\tx"), Some(7));
    }

    #[test]
    fn counters_keep_their_length() {
        assert_eq!(counter_text(99, 3), b"99 ");
        assert_eq!(counter_text(0, 20), b"0                   ");
        assert_eq!(counter_text(100, 2), b"100");
        assert_eq!(counter_text(13, 3), b"13 ");
        assert_eq!(parse_u64(b" 12"), Some(12));
        assert_eq!(parse_u64(b"1 2"), Some(1));
        assert_eq!(parse_u64(b"  "), None);
    }

    #[test]
    fn unsigned_32_truncates() {
        assert_eq!(parse_u32(b"4294967295"), Some(u32::MAX));
        assert_eq!(parse_u32(b"4294967296"), Some(0));
        assert_eq!(parse_u32(b"4294967299"), Some(3));
        assert_eq!(parse_u32(b"-1"), None);
    }

    #[test]
    fn signed_32_truncates() {
        assert_eq!(parse_i32(b"-5"), Some(-5));
        assert_eq!(parse_i32(b"2147483648"), Some(i32::MIN));
        assert_eq!(parse_i32(b"4294967296"), Some(0));
        assert_eq!(parse_i32(b"4294967299"), Some(3));
        assert_eq!(parse_i32(b"9223372036854775807"), Some(-1));
        assert_eq!(parse_i32(b"9223372036854775808"), None);
        assert_eq!(parse_i32(b"-9223372036854775808"), Some(0));
        assert_eq!(parse_i32(b"-9223372036854775809"), None);
        assert_eq!(parse_i32(b"abc"), None);
    }
}
