//! Which keys the row cache may hold, and their bytes.
//!
//! A cached row is found again, and evicted, by the bytes of its key: that
//! is exact only where two keys are equal for the server exactly when their
//! bytes are. So only unique indexes whose every part is a whole column of
//! an integer type or a variable-length binary string (VARBINARY, BLOB) are
//! cached, and an integer key only when written as the server writes it
//! (`7`, not `007`, `+7` or `7.0`). Character columns (collations, PAD
//! SPACE), fixed BINARY (zero padding), prefix parts and everything else
//! go to the server every time, as does any lookup that found no row.

use super::super::{ColumnKind, IndexMeta, TableMeta};

/// A key: its owner (the table's number in the cache, 4 bytes, and the
/// index's, 2 bytes, little-endian, set by `set_owner`), then its parts,
/// each as its length (4 bytes, little-endian) and bytes. One allocation,
/// looked up as a byte slice.
pub(crate) type KeyBytes = Box<[u8]>;

/// Bytes of a key's owner.
const OWNER_BYTES: usize = 6;

/// Names the table and index a key belongs to.
pub(crate) fn set_owner(key: &mut [u8], table: u32, index: u16) {
    if key.len() >= OWNER_BYTES {
        key[..4].copy_from_slice(&table.to_le_bytes());
        key[4..OWNER_BYTES].copy_from_slice(&index.to_le_bytes());
    }
}

/// The table and index a key belongs to.
pub(crate) fn owner(key: &[u8]) -> (u32, u16) {
    let b = |i: usize| key.get(i).copied().unwrap_or(0);
    (
        u32::from_le_bytes([b(0), b(1), b(2), b(3)]),
        u16::from_le_bytes([b(4), b(5)]),
    )
}

/// One column of a row image, as a change feed tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageCell<'a> {
    Null,
    /// The value as the server's text (integers in decimal).
    Value(&'a [u8]),
    /// The feed could not tell the value (undecoded, or not in the image).
    Unknown,
}

/// Whether rows found by a whole key of `index` may be cached.
pub(crate) fn cacheable_index(meta: &TableMeta, index: &IndexMeta) -> bool {
    index.unique
        && !index.key_columns.is_empty()
        && index.key_prefix.iter().all(Option::is_none)
        && index.key_columns.iter().all(|c| {
            c.and_then(|c| meta.columns.get(c))
                .is_some_and(|col| byte_exact(&col.kind))
        })
}

/// Whether two values of a column of `kind` are equal exactly when their
/// bytes are (integers: once written canonically).
fn byte_exact(kind: &ColumnKind) -> bool {
    matches!(
        kind,
        ColumnKind::Integer { .. } | ColumnKind::Bytes { fixed: false, .. }
    )
}

/// The cache key of a lookup by `keys` on `index`, when it may be cached:
/// the whole key, no NULL, integers canonical and in the column's range.
pub(crate) fn key_from_request(
    meta: &TableMeta,
    index: &IndexMeta,
    keys: &[Option<&[u8]>],
) -> Option<KeyBytes> {
    if keys.len() != index.key_columns.len() {
        return None;
    }
    let mut out = vec![0; OWNER_BYTES];
    for (part, column) in keys.iter().zip(&index.key_columns) {
        let value = (*part)?;
        let col = meta.columns.get((*column)?)?;
        if let ColumnKind::Integer { min, max } = col.kind {
            if !canonical_integer(value, min, max) {
                return None;
            }
        }
        push_part(&mut out, value);
    }
    Some(out.into())
}

/// The cache key of `index` in a row image: `Ok(None)` when a part is
/// NULL (never cached), `Err` when the image does not tell a part.
pub(crate) fn key_from_image(
    index: &IndexMeta,
    image: &[ImageCell<'_>],
) -> Result<Option<KeyBytes>, ()> {
    let mut out = vec![0; OWNER_BYTES];
    let mut null = false;
    for column in &index.key_columns {
        match column.and_then(|c| image.get(c)) {
            Some(ImageCell::Value(v)) => push_part(&mut out, v),
            Some(ImageCell::Null) => null = true,
            Some(ImageCell::Unknown) | None => return Err(()),
        }
    }
    Ok((!null).then(|| out.into()))
}

fn push_part(out: &mut Vec<u8>, value: &[u8]) {
    let len = u32::try_from(value.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(value);
}

/// A key's parts again (the verifier reads its row by them; tests compare
/// entries with the table).
pub(crate) fn decode(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut parts = Vec::new();
    let mut rest = bytes.get(OWNER_BYTES..).unwrap_or_default();
    while rest.len() >= 4 {
        let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let end = (4 + len).min(rest.len());
        parts.push(rest[4..end].to_vec());
        rest = &rest[end..];
    }
    parts
}

/// `text` is an integer in `[min, max]` written as the server writes it:
/// an optional `-`, no leading zero, not `-0`.
fn canonical_integer(text: &[u8], min: i128, max: i128) -> bool {
    let digits = text.strip_prefix(b"-").unwrap_or(text);
    let well_formed = !digits.is_empty()
        && digits.len() <= 39
        && digits.iter().all(u8::is_ascii_digit)
        && (digits == b"0" || digits[0] != b'0')
        && !(digits == b"0" && digits.len() != text.len());
    if !well_formed {
        return false;
    }
    std::str::from_utf8(text)
        .ok()
        .and_then(|t| t.parse::<i128>().ok())
        .is_some_and(|n| n >= min && n <= max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_integers_written_as_the_server_writes_them_are_keys() {
        let ok = |t: &str| canonical_integer(t.as_bytes(), -128, 255);
        assert!(ok("7") && ok("0") && ok("-128") && ok("255"));
        for bad in [
            "007", "+7", "7.0", "-0", "", "-", " 7", "7 ", "256", "-129", "1e2",
        ] {
            assert!(!ok(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_key_from_an_image_is_the_key_of_the_same_lookup() {
        let meta = super::super::super::memory::table_meta(
            "db",
            "t",
            &[
                super::super::super::memory::Col {
                    name: "id",
                    integer: true,
                    nullable: false,
                },
                super::super::super::memory::Col {
                    name: "v",
                    integer: false,
                    nullable: true,
                },
            ],
            &[super::super::super::memory::Idx {
                name: "PRIMARY",
                columns: &["id"],
                unique: true,
            }],
            None,
        );
        let index = &meta.indexes[0];
        assert!(cacheable_index(&meta, index));
        let asked = key_from_request(&meta, index, &[Some(b"42")]);
        let image = [ImageCell::Value(b"42"), ImageCell::Value(b"x")];
        assert_eq!(key_from_image(index, &image), Ok(asked));
        assert_eq!(key_from_request(&meta, index, &[Some(b"042")]), None);
        assert_eq!(key_from_request(&meta, index, &[None]), None);
        let unknown = [ImageCell::Unknown, ImageCell::Null];
        assert_eq!(key_from_image(index, &unknown), Err(()));
        let null = [ImageCell::Null, ImageCell::Null];
        assert_eq!(key_from_image(index, &null), Ok(None));
    }
}
