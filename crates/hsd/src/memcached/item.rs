//! A row as a memcached item: the value (the value columns joined), the
//! client flags, the cas a client sees, the expiry; and the values a
//! memcached write puts in each opened column.
//!
//! The cas a client sees is a hash of every opened column but the key, so
//! it changes whenever the row does, whoever changed it (memcached, SQL or
//! HandlerSocket). A container with a cas column also gets a new number
//! there on every memcached write (`CasClock`), so that storing the same
//! value again still changes the cas, as in memcached.

use super::config::Container;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// memcached's rule: an exptime up to 30 days is relative, beyond it a
/// unix time.
const RELATIVE_EXPTIME_MAX: i64 = 60 * 60 * 24 * 30;

/// Seconds since the epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The values written to cas columns: increasing, and starting at the
/// microseconds since the epoch, so a restart does not hand out numbers
/// already written (unless hsd wrote more than a million a second).
pub(crate) struct CasClock(AtomicU64);

impl CasClock {
    pub(crate) fn new() -> CasClock {
        let micros = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_micros() as u64);
        CasClock(AtomicU64::new(micros))
    }

    pub(crate) fn next(&self) -> u64 {
        self.0.fetch_add(1, Ordering::Relaxed) + 1
    }
}

/// What the expiry column holds for a memcached exptime: 0 never; a unix
/// time otherwise (a negative exptime is already past: 1).
pub(crate) fn expiry_of(exptime: i32, now: u64) -> u64 {
    let exptime = i64::from(exptime);
    if exptime == 0 {
        0
    } else if exptime < 0 {
        1
    } else if exptime <= RELATIVE_EXPTIME_MAX {
        now + exptime as u64
    } else {
        exptime as u64
    }
}

/// Where each part of an item is among a container's opened columns.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub(crate) values: usize,
    pub(crate) flags: Option<usize>,
    pub(crate) cas: Option<usize>,
    pub(crate) expire: Option<usize>,
    pub(crate) columns: usize,
}

impl Layout {
    pub(crate) fn of(c: &Container) -> Layout {
        let mut next = 1 + c.values.len();
        let mut take = |present: bool| {
            present.then(|| {
                next += 1;
                next - 1
            })
        };
        let flags = take(c.flags.is_some());
        let cas = take(c.cas.is_some());
        let expire = take(c.expire.is_some());
        Layout {
            values: c.values.len(),
            flags,
            cas,
            expire,
            columns: next,
        }
    }
}

/// A row read by key, as memcached sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Item {
    /// The opened columns' values, as read (the key first).
    pub(crate) row: Vec<Option<Vec<u8>>>,
    pub(crate) value: Vec<u8>,
    pub(crate) flags: u32,
    pub(crate) cas: u64,
    /// Unix time it expires at; 0 never.
    pub(crate) expires: u64,
}

fn number(cell: Option<&[u8]>) -> u64 {
    cell.and_then(|b| std::str::from_utf8(b).ok())
        .and_then(|s| s.trim().parse::<i64>().ok())
        .map_or(0, |n| n.max(0) as u64)
}

impl Item {
    /// The item a row holds; None when it has expired by `now`.
    pub(crate) fn from_row(
        row: &[Option<&[u8]>],
        layout: &Layout,
        separator: &[u8],
        now: u64,
    ) -> Option<Item> {
        let cell = |i: Option<usize>| i.and_then(|i| row.get(i).copied().flatten());
        let expires = number(cell(layout.expire));
        if expires != 0 && expires <= now {
            return None;
        }
        let mut value = Vec::new();
        // Trailing NULL columns are left out with their separators: a value
        // with fewer parts than columns was stored with the rest NULL
        // (`row_of`), so `x` reads back `x`, not `x|` (an empty part is
        // the empty string, not NULL: `x|` reads back `x|`).
        let columns = row.get(1..=layout.values).unwrap_or_default();
        let kept = columns.len() - columns.iter().rev().take_while(|c| c.is_none()).count();
        let joined = columns.get(..kept.max(1)).unwrap_or(columns);
        mc_proto::join_columns(joined.iter().copied(), separator, &mut value);
        Some(Item {
            row: row.iter().map(|c| c.map(<[u8]>::to_vec)).collect(),
            value,
            flags: number(cell(layout.flags)) as u32,
            // The expiry is left out: touching an item keeps its cas, as
            // in memcached.
            cas: row_cas(
                row.get(1..layout.expire.unwrap_or(row.len()))
                    .unwrap_or_default(),
            ),
            expires,
        })
    }

    /// Seconds left (`t` of the meta commands): -1 for never.
    pub(crate) fn ttl(&self, now: u64) -> i64 {
        if self.expires == 0 {
            -1
        } else {
            self.expires.saturating_sub(now) as i64
        }
    }
}

/// The cas a client sees: a 64-bit FNV-1a hash of the columns (NULL and
/// the empty string differ), never 0 (memcached's "no cas").
pub(crate) fn row_cas(columns: &[Option<&[u8]>]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    };
    for column in columns {
        match column {
            None => eat(0xff),
            Some(bytes) => {
                for b in (bytes.len() as u64).to_le_bytes() {
                    eat(b);
                }
                for &b in *bytes {
                    eat(b);
                }
            }
        }
    }
    hash.max(1)
}

/// The cas a client will see for a row written as `row` (the opened
/// columns, the key first): the same hash `Item::from_row` makes of it
/// once read back. Only values that read back as written reach a write
/// (`ops::check_fits`), so this is the cas the next get shows.
pub(crate) fn written_cas(row: &[Option<Vec<u8>>], layout: &Layout) -> u64 {
    let end = layout.expire.unwrap_or(row.len()).min(row.len());
    let columns: Vec<Option<&[u8]>> = row
        .get(1..end)
        .unwrap_or_default()
        .iter()
        .map(|c| c.as_deref())
        .collect();
    row_cas(&columns)
}

/// The opened columns' values of a memcached write: the key, the value
/// split into the value columns (missing parts NULL, which a read leaves
/// out again: every value reads back as given), flags, a new cas number
/// and the expiry.
pub(crate) fn row_of(
    key: &[u8],
    value: &[u8],
    flags: u32,
    expires: u64,
    cas_number: u64,
    layout: &Layout,
    separator: &[u8],
) -> Vec<Option<Vec<u8>>> {
    let mut row = Vec::with_capacity(layout.columns);
    row.push(Some(key.to_vec()));
    let parts = mc_proto::split_columns(value, separator, layout.values);
    for i in 0..layout.values {
        row.push(parts.get(i).map(|p| p.to_vec()));
    }
    if layout.flags.is_some() {
        row.push(Some(flags.to_string().into_bytes()));
    }
    if layout.cas.is_some() {
        row.push(Some(cas_number.to_string().into_bytes()));
    }
    if layout.expire.is_some() {
        row.push(Some(expires.to_string().into_bytes()));
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memcached::config::{Container, ContainerSpec};

    fn container() -> Container {
        Container::from_spec(ContainerSpec {
            name: "aaa".into(),
            db_schema: "test".into(),
            db_table: "t".into(),
            key_columns: "k".into(),
            value_columns: "a,b".into(),
            flags: Some("f".into()),
            cas_column: Some("c".into()),
            expire_time_column: Some("e".into()),
            unique_idx_name_on_key: None,
            ..ContainerSpec::default()
        })
        .expect("container")
    }

    #[test]
    fn rows_and_items_round_trip() {
        let layout = Layout::of(&container());
        assert_eq!(
            (layout.flags, layout.cas, layout.expire, layout.columns),
            (Some(3), Some(4), Some(5), 6)
        );
        let row = row_of(b"k1", b"x|y|z", 7, 0, 42, &layout, b"|");
        assert_eq!(
            row,
            [
                Some(b"k1".to_vec()),
                Some(b"x".to_vec()),
                Some(b"y|z".to_vec()),
                Some(b"7".to_vec()),
                Some(b"42".to_vec()),
                Some(b"0".to_vec())
            ]
        );
        let view: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
        let item = Item::from_row(&view, &layout, b"|", 100).expect("live");
        assert_eq!((item.value.as_slice(), item.flags), (&b"x|y|z"[..], 7));
        assert_eq!(item.ttl(100), -1);
        assert_eq!(
            written_cas(&row, &layout),
            item.cas,
            "the cas a write answers"
        );
        let other = row_of(b"k1", b"x|y|z", 7, 0, 43, &layout, b"|");
        let other: Vec<Option<&[u8]>> = other.iter().map(|c| c.as_deref()).collect();
        let again = Item::from_row(&other, &layout, b"|", 100).expect("live");
        assert_ne!(item.cas, again.cas, "a new cas number changes the cas");
        let short = row_of(b"k", b"only", 0, 0, 1, &layout, b"|");
        assert_eq!(short[2], None);
        // Every value reads back as set, whatever its separators.
        for value in [&b"x"[..], b"", b"x|", b"|", b"|y", b"x|y", b"x||", b"||"] {
            let row = row_of(b"k", value, 0, 0, 1, &layout, b"|");
            let view: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
            let item = Item::from_row(&view, &layout, b"|", 100).expect("live");
            assert_eq!(item.value, value, "{:?}", String::from_utf8_lossy(value));
        }
        let expired = row_of(b"k", b"v", 0, 99, 1, &layout, b"|");
        let expired: Vec<Option<&[u8]>> = expired.iter().map(|c| c.as_deref()).collect();
        assert!(Item::from_row(&expired, &layout, b"|", 100).is_none());
        assert!(Item::from_row(&expired, &layout, b"|", 98).is_some());
    }

    #[test]
    fn exptimes_as_memcached_reads_them() {
        assert_eq!(expiry_of(0, 1000), 0);
        assert_eq!(expiry_of(-1, 1000), 1);
        assert_eq!(expiry_of(10, 1000), 1010);
        assert_eq!(expiry_of(2_592_001, 1000), 2_592_001);
        assert_ne!(row_cas(&[None]), row_cas(&[Some(b"")]));
        let clock = CasClock::new();
        assert!(clock.next() < clock.next());
    }
}
