//! SQL text hsd builds itself: identifiers and binary string literals.
//!
//! Values travel as `_binary'...'` literals: the server stores such a
//! literal into a column exactly as it stores bytes given in the binary
//! character set, which is what the original HandlerSocket did with every
//! key and value. Only `\`, `'` and NUL need escaping (the session runs with
//! backslash escapes on, and in utf8mb4 neither byte can be part of a
//! multi-byte character).

/// Appends `` `name` `` with backticks doubled.
pub fn push_identifier(out: &mut Vec<u8>, name: &[u8]) {
    out.push(b'`');
    for &b in name {
        if b == b'`' {
            out.push(b'`');
        }
        out.push(b);
    }
    out.push(b'`');
}

/// Appends `_binary'...'`, or `NULL`.
pub fn push_binary(out: &mut Vec<u8>, value: Option<&[u8]>) {
    let Some(bytes) = value else {
        out.extend_from_slice(b"NULL");
        return;
    };
    out.extend_from_slice(b"_binary'");
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\'' => b"\\'",
            0 => b"\\0",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escaped);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'\'');
}

/// Appends a decimal number.
pub fn push_number(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals() {
        let mut out = Vec::new();
        push_binary(&mut out, Some(b"a'b\\c\0d"));
        assert_eq!(out, b"_binary'a\\'b\\\\c\\0d'");
        out.clear();
        push_binary(&mut out, None);
        push_binary(&mut out, Some(b""));
        assert_eq!(out, b"NULL_binary''");
        out.clear();
        push_identifier(&mut out, b"we`ird");
        assert_eq!(out, b"`we``ird`");
        out.clear();
        push_number(&mut out, 0);
        out.push(b' ');
        push_number(&mut out, u64::MAX);
        assert_eq!(out, b"0 18446744073709551615");
    }
}
