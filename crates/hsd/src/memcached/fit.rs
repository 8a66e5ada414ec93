//! What a container's columns keep exactly as memcached gave it, judged
//! from the table's description (`ColumnMeta`): keys that would be stored
//! as another key (`01` into an integer column is row 1; a key longer than
//! its column is cut into another row's key) are refused as memcached
//! refuses a bad key, and values a column would cut or convert are refused
//! before the write, so that no command answers `STORED` for what the
//! table does not keep as given (docs/memcached.md, "What a container
//! keeps").

use hsd_storage::{ColumnKind, ColumnMeta};

/// Character sets whose text is not a superset of ASCII bytes: a memcached
/// key's bytes never mean the same characters there.
fn wide_charset(charset: &str) -> bool {
    matches!(charset, "ucs2" | "utf16" | "utf16le" | "utf32")
}

pub(crate) use hsd_storage::TextRules;

/// Whether `text` is valid in `charset` and how many characters it has
/// (None: not representable, or a character set whose rules hsd does not
/// know, for which only ASCII is taken).
fn characters(rules: TextRules, charset: &str, text: &[u8]) -> Option<u64> {
    if rules == TextRules::KeepsBytes {
        return Some(text.len() as u64);
    }
    if charset.starts_with("utf8") {
        let s = std::str::from_utf8(text).ok()?;
        // MySQL's utf8mb3 has no character beyond the BMP (four bytes).
        if charset == "utf8mb3" && s.chars().any(|c| c.len_utf8() > 3) {
            return None;
        }
        return Some(s.chars().count() as u64);
    }
    match charset {
        // Every byte is a character (latin1 maps all 256; binary is bytes).
        "latin1" | "binary" => Some(text.len() as u64),
        _ if wide_charset(charset) => None,
        // ascii, and the character sets whose multi-byte rules hsd does not
        // know: ASCII bytes are one character each in every one of them.
        _ => text.is_ascii().then_some(text.len() as u64),
    }
}

/// Whether a text value fits a column of `charset` limited to `max`
/// (characters for CHAR/VARCHAR, bytes for the TEXT types, `bytes`).
fn text_fits(rules: TextRules, charset: &str, max: u64, bytes: bool, text: &[u8]) -> bool {
    match characters(rules, charset, text) {
        Some(_) if bytes => text.len() as u64 <= max,
        Some(chars) => chars <= max,
        None => false,
    }
}

/// Whether `text` is an integer written as the column writes it back: no
/// sign but `-`, no leading zeros, no `-0`, within the column's range.
fn canonical_integer(text: &[u8], min: i128, max: i128) -> bool {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    if digits.is_empty()
        || digits.len() > 39
        || !digits.iter().all(u8::is_ascii_digit)
        || (digits.len() > 1 && digits[0] == b'0')
        || text == b"-0"
    {
        return false;
    }
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<i128>().ok())
        .is_some_and(|n| (min..=max).contains(&n))
}

/// Why a container's key column cannot hold memcached keys at all (None:
/// it can, for the keys `key_fits` takes).
pub(crate) fn key_column_refusal(column: &ColumnMeta) -> Option<String> {
    match &column.kind {
        ColumnKind::Integer { .. } | ColumnKind::Bytes { .. } => None,
        ColumnKind::Text { charset, .. } if wide_charset(charset) => Some(format!(
            "its key column {} is of character set {charset}, which no memcached key's bytes \
             are text of",
            column.name
        )),
        ColumnKind::Text { .. } => None,
        _ => Some(format!(
            "its key column {} is not a text, binary or integer column: memcached keys would \
             not read back as given",
            column.name
        )),
    }
}

/// Whether `key` is stored in the key column exactly as given, so that
/// the row it writes is found by the same key and by no other.
pub(crate) fn key_fits(rules: TextRules, column: &ColumnMeta, key: &[u8]) -> bool {
    match &column.kind {
        ColumnKind::Integer { min, max } => canonical_integer(key, *min, *max),
        ColumnKind::Text { charset, max_chars } => {
            // MySQL's PAD SPACE collations (every MariaDB one, MySQL's
            // but the 0900 ones) compare `a ` equal to `a`, and CHAR reads
            // back without trailing spaces: such a key (the binary
            // protocol allows it) would name another key's row.
            let pads = rules == TextRules::Charsets && key.last() == Some(&b' ');
            !pads && text_fits(rules, charset, *max_chars, column.is_blob, key)
        }
        ColumnKind::Bytes { max_len, fixed } => {
            let n = key.len() as u64;
            // BINARY(n) pads a shorter key with NUL bytes.
            if *fixed {
                n == *max_len
            } else {
                n <= *max_len
            }
        }
        _ => false,
    }
}

/// Why a value cannot go into a column as given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Misfit {
    /// Longer than the column (memcached's "object too large").
    TooLong,
    /// Not what the column's type keeps as given (text into an integer
    /// column, a number out of its range, bytes its character set lacks).
    Unkept,
}

/// Whether `value` is kept as given by `column`; the kinds hsd cannot
/// judge (dates, decimals, ...) are left to the server.
pub(crate) fn value_fits(
    rules: TextRules,
    column: &ColumnMeta,
    value: &[u8],
) -> Result<(), Misfit> {
    match &column.kind {
        ColumnKind::Integer { min, max } => {
            if canonical_integer(value, *min, *max) {
                Ok(())
            } else {
                Err(Misfit::Unkept)
            }
        }
        ColumnKind::Text { charset, max_chars } => match characters(rules, charset, value) {
            None => Err(Misfit::Unkept),
            Some(_) if column.is_blob && value.len() as u64 > *max_chars => Err(Misfit::TooLong),
            Some(chars) if !column.is_blob && chars > *max_chars => Err(Misfit::TooLong),
            Some(_) => Ok(()),
        },
        ColumnKind::Bytes { max_len, fixed } => {
            let n = value.len() as u64;
            if n > *max_len {
                Err(Misfit::TooLong)
            } else if *fixed && n < *max_len {
                // BINARY(n) would read back padded with NUL bytes.
                Err(Misfit::Unkept)
            } else {
                Ok(())
            }
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsd_storage::ColumnMeta;

    fn column(kind: ColumnKind, is_blob: bool) -> ColumnMeta {
        ColumnMeta {
            name: "c".into(),
            name_sql: "`c`".into(),
            select_sql: "`c`".into(),
            is_blob,
            kind,
            nullable: true,
            auto_increment: false,
            zero_on_insert: false,
            int_read: hsd_storage::IntRead::Integer,
            write_form: Default::default(),
            locate: Default::default(),
        }
    }

    const C: TextRules = TextRules::Charsets;

    fn text(charset: &str, max_chars: u64) -> ColumnMeta {
        column(
            ColumnKind::Text {
                charset: charset.into(),
                max_chars,
            },
            false,
        )
    }

    #[test]
    fn integer_keys_only_in_canonical_form() {
        let int = column(
            ColumnKind::Integer {
                min: -2_147_483_648,
                max: 2_147_483_647,
            },
            false,
        );
        for good in [&b"1"[..], b"0", b"-5", b"2147483647", b"-2147483648"] {
            assert!(key_fits(C, &int, good), "{good:?}");
        }
        for bad in [
            &b"01"[..],
            b"+1",
            b"1.0",
            b"1abc",
            b"abc",
            b"-0",
            b"",
            b"2147483648",
            b" 1",
            b"99999999999999999999999999999999999999999",
        ] {
            assert!(!key_fits(C, &int, bad), "{bad:?}");
        }
        assert!(key_column_refusal(&int).is_none());
    }

    #[test]
    fn text_keys_within_the_column_and_its_character_set() {
        let latin1 = text("latin1", 4);
        assert!(key_fits(C, &latin1, b"abcd"));
        assert!(key_fits(C, &latin1, b"\xe9\xe9"));
        assert!(!key_fits(C, &latin1, b"abcde"));
        let utf8 = text("utf8mb4", 2);
        assert!(key_fits(C, &utf8, "éé".as_bytes()));
        assert!(!key_fits(C, &utf8, "ééé".as_bytes()));
        assert!(!key_fits(C, &utf8, b"\xff"));
        assert!(!key_fits(C, &latin1, b"ab "));
        assert!(key_fits(TextRules::KeepsBytes, &latin1, b"ab "));
        let mb3 = text("utf8mb3", 8);
        assert!(!key_fits(C, &mb3, "\u{1F600}".as_bytes()));
        let ascii = text("ascii", 8);
        assert!(!key_fits(C, &ascii, "é".as_bytes()));
        let sjis = text("sjis", 8);
        assert!(key_fits(C, &sjis, b"plain"));
        assert!(!key_fits(C, &sjis, b"\x82\xa0"));
        assert!(key_column_refusal(&text("utf16", 8)).is_some());
        // SQLite keeps a TEXT value's bytes.
        let sqlite = text("utf8", u64::MAX);
        assert!(key_fits(TextRules::KeepsBytes, &sqlite, b"\xff\xfe"));
        assert_eq!(
            value_fits(TextRules::KeepsBytes, &sqlite, b"\xfe\xca"),
            Ok(())
        );
        let fixed = column(
            ColumnKind::Bytes {
                max_len: 4,
                fixed: true,
            },
            false,
        );
        assert!(key_fits(C, &fixed, b"abcd") && !key_fits(C, &fixed, b"abc"));
        let date = column(
            ColumnKind::Other {
                cast: None,
                unsigned: false,
            },
            false,
        );
        assert!(key_column_refusal(&date).is_some());
    }

    #[test]
    fn values_too_long_or_not_kept() {
        assert_eq!(
            value_fits(C, &text("latin1", 3), b"abcd"),
            Err(Misfit::TooLong)
        );
        assert_eq!(value_fits(C, &text("latin1", 3), b"abc"), Ok(()));
        assert_eq!(
            value_fits(C, &text("utf8mb4", 1), b"\xff"),
            Err(Misfit::Unkept)
        );
        // TEXT types count bytes: 65,535 of them, whatever the characters.
        let long_text = column(
            ColumnKind::Text {
                charset: "utf8mb4".into(),
                max_chars: 4,
            },
            true,
        );
        assert_eq!(value_fits(C, &long_text, "éé".as_bytes()), Ok(()));
        assert_eq!(
            value_fits(C, &long_text, "ééé".as_bytes()),
            Err(Misfit::TooLong)
        );
        let int = column(ColumnKind::Integer { min: 0, max: 255 }, false);
        assert_eq!(value_fits(C, &int, b"255"), Ok(()));
        assert_eq!(value_fits(C, &int, b"256"), Err(Misfit::Unkept));
        assert_eq!(value_fits(C, &int, b"x"), Err(Misfit::Unkept));
    }
}
