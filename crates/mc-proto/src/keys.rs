//! The InnoDB memcached plugin's key and value syntax.
//!
//! A key `@@<container><delimiter><key>` addresses a key of a named
//! container (mapping); `@@<container>` alone makes that container the
//! connection's default; any other key goes to the default container. The
//! delimiter is the plugin's `table_map_delimiter` (default `.`). A
//! container with several value columns stores one memcached value as the
//! columns joined by the plugin's `separator` (default `|`), and splits a
//! stored value back into them.

/// The plugin's default `table_map_delimiter`.
pub const DEFAULT_CONTAINER_DELIMITER: &[u8] = b".";
/// The plugin's default `separator`.
pub const DEFAULT_VALUE_SEPARATOR: &[u8] = b"|";

const CONTAINER_PREFIX: &[u8] = b"@@";

/// What a key names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyTarget<'a> {
    /// A key of the connection's default container.
    Default(&'a [u8]),
    /// `@@container.key`: a key of a named container (the key may be empty;
    /// the caller refuses it like any empty key).
    InContainer { container: &'a [u8], key: &'a [u8] },
    /// `@@container`: switch the connection's default container.
    SwitchDefault { container: &'a [u8] },
}

/// Reads a memcached key in the plugin's syntax. A key that is just `@@`
/// names no container and is a plain key; an empty delimiter is taken as
/// the default one.
pub fn parse_key<'a>(key: &'a [u8], delimiter: &[u8]) -> KeyTarget<'a> {
    let delimiter = if delimiter.is_empty() {
        DEFAULT_CONTAINER_DELIMITER
    } else {
        delimiter
    };
    let Some(named) = key.strip_prefix(CONTAINER_PREFIX).filter(|n| !n.is_empty()) else {
        return KeyTarget::Default(key);
    };
    match find(named, delimiter) {
        Some(0) => KeyTarget::Default(key),
        Some(at) => KeyTarget::InContainer {
            container: &named[..at],
            key: &named[at + delimiter.len()..],
        },
        None => KeyTarget::SwitchDefault { container: named },
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(haystack, needle)
}

/// Joins value columns with the separator; a NULL column (`None`) joins as
/// an empty string.
pub fn join_columns<'v>(
    columns: impl IntoIterator<Item = Option<&'v [u8]>>,
    separator: &[u8],
    out: &mut Vec<u8>,
) {
    for (index, column) in columns.into_iter().enumerate() {
        if index > 0 {
            out.extend_from_slice(separator);
        }
        out.extend_from_slice(column.unwrap_or_default());
    }
}

/// Splits a value into at most `columns` parts: the last column keeps any
/// further separators, so `join_columns` of the parts gives the value back.
/// Fewer separators than columns give fewer parts (the caller decides what
/// the missing columns hold).
pub fn split_columns<'a>(value: &'a [u8], separator: &[u8], columns: usize) -> Vec<&'a [u8]> {
    if columns <= 1 || separator.is_empty() {
        return vec![value];
    }
    let mut parts = Vec::with_capacity(columns);
    let mut rest = value;
    while parts.len() + 1 < columns {
        match find(rest, separator) {
            Some(at) => {
                parts.push(&rest[..at]);
                rest = &rest[at + separator.len()..];
            }
            None => break,
        }
    }
    parts.push(rest);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn container_keys() {
        let dot = DEFAULT_CONTAINER_DELIMITER;
        assert_eq!(parse_key(b"plain", dot), KeyTarget::Default(b"plain"));
        assert_eq!(
            parse_key(b"@@aaa.AA", dot),
            KeyTarget::InContainer {
                container: b"aaa",
                key: b"AA"
            }
        );
        assert_eq!(
            parse_key(b"@@aaa.a.b", dot),
            KeyTarget::InContainer {
                container: b"aaa",
                key: b"a.b"
            }
        );
        assert_eq!(
            parse_key(b"@@aaa", dot),
            KeyTarget::SwitchDefault { container: b"aaa" }
        );
        assert_eq!(
            parse_key(b"@@aaa.", dot),
            KeyTarget::InContainer {
                container: b"aaa",
                key: b""
            }
        );
        assert_eq!(parse_key(b"@@", dot), KeyTarget::Default(b"@@"));
        assert_eq!(parse_key(b"@@.x", dot), KeyTarget::Default(b"@@.x"));
        assert_eq!(parse_key(b"a@@b.c", dot), KeyTarget::Default(b"a@@b.c"));
        assert_eq!(
            parse_key(b"@@t::k", b"::"),
            KeyTarget::InContainer {
                container: b"t",
                key: b"k"
            }
        );
        assert_eq!(
            parse_key(b"@@t.k", b"::"),
            KeyTarget::SwitchDefault { container: b"t.k" }
        );
        assert_eq!(
            parse_key(b"@@t.k", b""),
            KeyTarget::InContainer {
                container: b"t",
                key: b"k"
            }
        );
    }

    #[test]
    fn columns_join_and_split() {
        let sep = DEFAULT_VALUE_SEPARATOR;
        let mut out = Vec::new();
        join_columns([Some(&b"a"[..]), None, Some(b"c")], sep, &mut out);
        assert_eq!(out, b"a||c");
        assert_eq!(split_columns(b"a||c", sep, 3), vec![&b"a"[..], b"", b"c"]);
        assert_eq!(
            split_columns(b"a|b|c|d", sep, 3),
            vec![&b"a"[..], b"b", b"c|d"]
        );
        assert_eq!(split_columns(b"a|b", sep, 3), vec![&b"a"[..], b"b"]);
        assert_eq!(split_columns(b"a|b", sep, 1), vec![&b"a|b"[..]]);
        assert_eq!(split_columns(b"", sep, 2), vec![&b""[..]]);
        assert_eq!(split_columns(b"x--y", b"--", 2), vec![&b"x"[..], b"y"]);
        for value in [&b"a|b|c"[..], b"|", b"||x|"] {
            let mut joined = Vec::new();
            join_columns(
                split_columns(value, sep, 3).into_iter().map(Some),
                sep,
                &mut joined,
            );
            assert_eq!(joined, value);
        }
    }
}
