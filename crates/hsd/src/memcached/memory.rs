//! The items of `cache_only` containers (`policy`): kept in memory as
//! memcached keeps them, never in a table. One store for every loop,
//! bounded in bytes (`[memcached] cache_only_mib`): past the bound the
//! least recently used items go, as memcached evicts. An item is kept as
//! the row a table would hold (the container's opened columns), so that
//! every command decides as it does over a table (`ops::Decision`); a
//! read-modify-write runs under the store's lock, so it needs no guard.
//! Nothing survives a restart; `flush_all` empties a container whose
//! `flush_policy` is `cache_only`.

use super::item::{Item, Layout};
use super::ops::{Decision, Failure, Fetched};
use hs_proto::Value;
use lru::LruCache;
use std::sync::{Mutex, MutexGuard};

/// `[memcached] cache_only_mib` unless set.
pub(crate) const DEFAULT_CACHE_ONLY_MIB: u64 = 64;
/// Bytes an item costs beyond its key and columns (the map's entry, the
/// row's vectors), so that many tiny items are bounded too.
const ITEM_OVERHEAD: usize = 96;

/// memcached's answer to an item larger than all the memory it may use.
pub(crate) const TOO_LARGE: Failure = Failure::Unkept("out of memory storing object");

/// One item's place: the container's number and the key.
type Slot = (usize, Vec<u8>);

struct Items {
    map: LruCache<Slot, Vec<Value>>,
    bytes: usize,
}

/// The `cache_only` items of every container.
pub(crate) struct MemoryItems {
    items: Mutex<Items>,
    limit: usize,
}

fn cost(slot: &Slot, row: &[Value]) -> usize {
    ITEM_OVERHEAD
        + slot.1.len()
        + row
            .iter()
            .map(|c| c.as_ref().map_or(0, Vec::len) + 8)
            .sum::<usize>()
}

impl MemoryItems {
    pub(crate) fn new(limit_bytes: usize) -> MemoryItems {
        MemoryItems {
            items: Mutex::new(Items {
                map: LruCache::unbounded(),
                bytes: 0,
            }),
            limit: limit_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Items> {
        // A panic elsewhere while holding the lock leaves whole items (each
        // change is one map operation and a byte count): go on with them.
        self.items
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The item of `key`, as a table read would give it (an expired one
    /// is dropped and reads as missing).
    pub(crate) fn fetch(
        &self,
        container: usize,
        key: &[u8],
        layout: &Layout,
        separator: &[u8],
        now: u64,
    ) -> Fetched {
        let mut items = self.lock();
        let slot = (container, key.to_vec());
        let (raw, item) = items.read(&slot, layout, separator, now);
        Fetched { raw, item }
    }

    /// Stores `row` under `key`, whatever was there.
    pub(crate) fn set(&self, container: usize, key: &[u8], row: Vec<Value>) -> Result<(), Failure> {
        let mut items = self.lock();
        items.put((container, key.to_vec()), row, self.limit)
    }

    /// Reads the item, lets `decide` choose, and does it, under the lock.
    pub(crate) fn read_modify_write<T>(
        &self,
        container: usize,
        key: &[u8],
        layout: &Layout,
        separator: &[u8],
        now: u64,
        decide: impl FnOnce(Option<&Item>) -> Decision<T>,
    ) -> Result<T, Failure> {
        let mut items = self.lock();
        let slot = (container, key.to_vec());
        let (_, item) = items.read(&slot, layout, separator, now);
        match decide(item.as_ref()) {
            Decision::Answer(answer) => Ok(answer),
            Decision::Write(row, answer) => {
                items.put(slot, row, self.limit)?;
                Ok(answer)
            }
            Decision::Delete(answer) => {
                items.remove(&slot);
                Ok(answer)
            }
        }
    }

    /// Drops every item of `container`; how many.
    pub(crate) fn clear(&self, container: usize) -> usize {
        let mut items = self.lock();
        let slots: Vec<Slot> = items
            .map
            .iter()
            .filter(|(slot, _)| slot.0 == container)
            .map(|(slot, _)| slot.clone())
            .collect();
        for slot in &slots {
            items.remove(slot);
        }
        slots.len()
    }

    /// Items and bytes held now.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let items = self.lock();
        (items.map.len(), items.bytes)
    }
}

impl Items {
    fn read(
        &mut self,
        slot: &Slot,
        layout: &Layout,
        separator: &[u8],
        now: u64,
    ) -> (Option<Vec<Value>>, Option<Item>) {
        let Some(row) = self.map.get(slot) else {
            return (None, None);
        };
        let view: Vec<Option<&[u8]>> = row.iter().map(|c| c.as_deref()).collect();
        match Item::from_row(&view, layout, separator, now) {
            Some(item) => (Some(row.clone()), Some(item)),
            None => {
                self.remove(slot);
                (None, None)
            }
        }
    }

    fn put(&mut self, slot: Slot, row: Vec<Value>, limit: usize) -> Result<(), Failure> {
        let size = cost(&slot, &row);
        if size > limit {
            return Err(TOO_LARGE);
        }
        self.remove(&slot);
        while self.bytes + size > limit {
            let Some((old_slot, old_row)) = self.map.pop_lru() else {
                break;
            };
            self.bytes = self.bytes.saturating_sub(cost(&old_slot, &old_row));
        }
        self.bytes += size;
        self.map.put(slot, row);
        Ok(())
    }

    fn remove(&mut self, slot: &Slot) {
        if let Some(row) = self.map.pop(slot) {
            self.bytes = self.bytes.saturating_sub(cost(slot, &row));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            values: 1,
            flags: None,
            cas: None,
            expire: Some(2),
            columns: 3,
        }
    }

    fn row(key: &str, value: &str, expires: u64) -> Vec<Value> {
        vec![
            Some(key.as_bytes().to_vec()),
            Some(value.as_bytes().to_vec()),
            Some(expires.to_string().into_bytes()),
        ]
    }

    #[test]
    fn items_are_bounded_and_the_least_recently_used_go_first() {
        let one = cost(&(0, b"k00".to_vec()), &row("k00", "v", 0));
        let store = MemoryItems::new(one * 3);
        for k in ["k00", "k01", "k02"] {
            store.set(0, k.as_bytes(), row(k, "v", 0)).expect("fits");
        }
        // k00 read: k01 is now the least recently used.
        assert!(store.fetch(0, b"k00", &layout(), b"|", 10).item.is_some());
        store.set(0, b"k03", row("k03", "v", 0)).expect("fits");
        assert!(store.fetch(0, b"k01", &layout(), b"|", 10).item.is_none());
        assert!(store.fetch(0, b"k00", &layout(), b"|", 10).item.is_some());
        assert_eq!(store.held(), (3, one * 3));
        // Another container's key of the same bytes is another item.
        assert!(store.fetch(1, b"k00", &layout(), b"|", 10).item.is_none());
        let huge = "x".repeat(one * 3);
        assert_eq!(store.set(0, b"big", row("big", &huge, 0)), Err(TOO_LARGE));
        assert_eq!(store.held().0, 3, "a refused item evicts nothing");
        assert_eq!(store.clear(0), 3);
        assert_eq!(store.held(), (0, 0));
    }

    #[test]
    fn expired_items_read_as_missing_and_go() {
        let store = MemoryItems::new(1 << 20);
        store.set(0, b"a", row("a", "v", 5)).expect("fits");
        assert!(store.fetch(0, b"a", &layout(), b"|", 4).item.is_some());
        let later = store.fetch(0, b"a", &layout(), b"|", 6);
        assert!(later.item.is_none() && later.raw.is_none());
        assert_eq!(store.held(), (0, 0));
        let added = store.read_modify_write(0, b"a", &layout(), b"|", 6, |item| match item {
            None => Decision::Write(row("a", "w", 0), true),
            Some(_) => Decision::Answer(false),
        });
        assert_eq!(added, Ok(true));
        let deleted =
            store.read_modify_write(0, b"a", &layout(), b"|", 6, |_| Decision::Delete(()));
        assert_eq!(deleted, Ok(()));
        assert_eq!(store.held(), (0, 0));
    }
}
