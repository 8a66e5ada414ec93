//! A cached row in one allocation: its key and every column, so that an
//! entry costs one heap block (a separate block per value cost 32-48 bytes
//! each; the row cache's budget buys rows, not allocator headers).
//!
//! Layout: the key's length (4 bytes) and the column count (2 bytes),
//! little-endian; then one end offset per column (4 bytes each, relative
//! to the values, top bit set for NULL); then the key's bytes; then the
//! values' bytes back to back.

use std::sync::Arc;

const HEADER: usize = 6;
const NULL: u32 = 1 << 31;

/// A row and its key, shared between the cache and the answers reading it.
#[derive(Clone)]
pub struct PackedRow(Arc<[u8]>);

impl PackedRow {
    /// Packs `key` and `row`; `None` when it is too large to describe
    /// (a value past 2 GiB, more than 65535 columns: never cached).
    pub(crate) fn new(key: &[u8], row: &[Option<Box<[u8]>>]) -> Option<PackedRow> {
        let columns = u16::try_from(row.len()).ok()?;
        let key_len = u32::try_from(key.len()).ok()?;
        let values: usize = row.iter().flatten().map(|v| v.len()).sum();
        let total = HEADER + 4 * row.len() + key.len() + values;
        if values >= NULL as usize {
            return None;
        }
        let mut out = Vec::with_capacity(total);
        out.extend_from_slice(&key_len.to_le_bytes());
        out.extend_from_slice(&columns.to_le_bytes());
        let mut end = 0u32;
        for value in row {
            let mark = match value {
                // `values` < 2^31 bounds every end.
                Some(v) => {
                    end += v.len() as u32;
                    end
                }
                None => end | NULL,
            };
            out.extend_from_slice(&mark.to_le_bytes());
        }
        out.extend_from_slice(key);
        for v in row.iter().flatten() {
            out.extend_from_slice(v);
        }
        Some(PackedRow(out.into()))
    }

    fn word(&self, at: usize) -> Option<u32> {
        let b = self.0.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn columns(&self) -> usize {
        self.0
            .get(4..HEADER)
            .map_or(0, |b| usize::from(u16::from_le_bytes([b[0], b[1]])))
    }

    fn key_start(&self) -> usize {
        HEADER + 4 * self.columns()
    }

    /// Whether `other` is this very entry's row (not an equal one filled
    /// again): the verifier's test that an entry stayed in place.
    pub(crate) fn same(&self, other: &PackedRow) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The key it was stored under.
    pub(crate) fn key(&self) -> &[u8] {
        let len = self.word(0).unwrap_or(0) as usize;
        let start = self.key_start();
        self.0.get(start..start + len).unwrap_or(&[])
    }

    /// Column `i` (in the table's order): `None` for NULL or past the row.
    pub fn column(&self, i: usize) -> Option<&[u8]> {
        if i >= self.columns() {
            return None;
        }
        let end = self.word(HEADER + 4 * i)?;
        if end & NULL != 0 {
            return None;
        }
        let start = match i {
            0 => 0,
            _ => self.word(HEADER + 4 * (i - 1))? & !NULL,
        };
        let values = self.key_start() + self.word(0)? as usize;
        self.0.get(values + start as usize..values + end as usize)
    }

    /// Every column, for tests that compare entries with the table.
    #[cfg(test)]
    pub(crate) fn values(&self) -> Vec<Option<Vec<u8>>> {
        (0..self.columns())
            .map(|i| self.column(i).map(<[u8]>::to_vec))
            .collect()
    }

    /// Heap bytes it holds: its block (the Arc's two counts included) as
    /// glibc's malloc rounds it.
    pub(crate) fn heap_bytes(&self) -> usize {
        heap_block(16 + self.0.len())
    }
}

/// Bytes glibc's malloc takes for a request of `size` bytes: an 8-byte
/// header, rounded up to 16, 32 at least.
pub(crate) fn heap_block(size: usize) -> usize {
    (size + 8).div_ceil(16).max(2) * 16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(values: &[Option<&str>]) -> Vec<Option<Box<[u8]>>> {
        values
            .iter()
            .map(|v| v.map(|s| s.as_bytes().into()))
            .collect()
    }

    #[test]
    fn columns_and_key_read_back_as_stored() {
        let r = row(&[Some("7"), None, Some(""), Some("ursula"), None]);
        let p = PackedRow::new(b"\x01\x00key", &r).expect("packs");
        assert_eq!(p.key(), b"\x01\x00key");
        let got: Vec<Option<&[u8]>> = (0..6).map(|i| p.column(i)).collect();
        assert_eq!(
            got,
            vec![
                Some(&b"7"[..]),
                None,
                Some(&b""[..]),
                Some(&b"ursula"[..]),
                None,
                None
            ]
        );
        assert_eq!(p.values().len(), 5);
    }

    #[test]
    fn an_empty_row_and_an_empty_key_pack() {
        let p = PackedRow::new(b"", &[]).expect("packs");
        assert_eq!(p.key(), b"");
        assert_eq!(p.column(0), None);
    }

    #[test]
    fn heap_blocks_round_as_glibc_does() {
        assert_eq!(heap_block(1), 32);
        assert_eq!(heap_block(24), 32);
        assert_eq!(heap_block(25), 48);
        assert_eq!(heap_block(100), 112);
    }
}
