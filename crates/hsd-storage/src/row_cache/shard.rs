//! One shard's entries and every byte they cost: a slab of entries, a hash
//! table of slot numbers to find them by key, and a CLOCK hand over the
//! slab for evictions by capacity.
//!
//! The bound counts what is really held: each row's heap block
//! (`PackedRow::heap_bytes`), the slab's and the free list's capacity, and
//! the hash table's buckets. The slab grows only when no slot is free and
//! its doubled size still fits (otherwise the hand frees a slot first), and
//! the table is reserved to the slab's capacity when the slab grows, so no
//! structure outgrows the budget behind the count's back. A std `HashMap`
//! keyed by boxed keys plus a ring of keys cost ~540 bytes per ~70-byte
//! row; this costs ~200.

use super::packed::{heap_block, PackedRow};
use hashbrown::HashTable;
use std::sync::atomic::{AtomicBool, Ordering};

/// A cached row and what makes it current.
pub(super) struct Entry {
    pub(super) row: PackedRow,
    /// The key's hash (the table rehashes by it).
    pub(super) hash: u64,
    pub(super) table_epoch: u64,
    pub(super) global_epoch: u64,
    /// When it was filled: seconds since the cache began (`RowCache::now`).
    pub(super) born: u32,
    /// Read since the hand last passed (CLOCK's second chance).
    pub(super) referenced: AtomicBool,
}

#[derive(Default)]
pub(super) struct ShardMap {
    slots: Vec<Option<Entry>>,
    /// Slots whose entry went; reserved to the slab's capacity.
    free: Vec<u32>,
    index: HashTable<u32>,
    hand: usize,
    /// The rows' heap blocks.
    row_bytes: usize,
}

/// Bytes of a slab of `slots` entries and of its free list, as the heap
/// holds them.
fn slab_bytes(slots: usize) -> usize {
    if slots == 0 {
        return 0;
    }
    heap_block(slots * std::mem::size_of::<Option<Entry>>()) + heap_block(slots * 4)
}

/// Bytes of a hash table reserved for `capacity` slot numbers (a plan:
/// what a table holds is `ShardMap::table_heap`): hashbrown keeps buckets
/// at a power of two with 1/8 spare, each a 4-byte slot number (the array
/// rounded to 16) and a control byte, plus one group of control bytes, in
/// one heap block.
fn table_bytes(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    let buckets = if capacity < 8 {
        if capacity < 4 {
            4
        } else {
            8
        }
    } else {
        (capacity * 8 / 7).next_power_of_two()
    };
    heap_block((buckets * 4).next_multiple_of(16) + buckets + 16)
}

impl ShardMap {
    /// Everything the shard holds, in bytes.
    pub(super) fn bytes(&self) -> usize {
        self.row_bytes + slab_bytes(self.slots.capacity()) + self.table_heap()
    }

    /// The heap block the hash table holds.
    fn table_heap(&self) -> usize {
        match self.index.allocation_size() {
            0 => 0,
            n => heap_block(n),
        }
    }

    /// What the shard would hold with a slab of `slots` (the table reserved
    /// to it when it grows).
    fn planned_bytes(&self, slots: usize, cost: usize) -> usize {
        let table = if slots > self.slots.capacity() {
            table_bytes(slots).max(self.table_heap())
        } else {
            self.table_heap()
        };
        self.row_bytes + cost + slab_bytes(slots) + table
    }

    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    fn slot(&self, i: u32) -> Option<&Entry> {
        self.slots.get(i as usize).and_then(Option::as_ref)
    }

    /// An entry that `keep` accepts, looking at up to `look` slots from
    /// slot `from` on (wrapping): the verifier's sample.
    pub(super) fn pick(
        &self,
        from: usize,
        look: usize,
        keep: impl Fn(&Entry) -> bool,
    ) -> Option<&Entry> {
        let n = self.slots.len();
        if n == 0 {
            return None;
        }
        (0..look.min(n))
            .filter_map(|k| self.slots[(from + k) % n].as_ref())
            .find(|e| keep(e))
    }

    /// The entry under `key`.
    pub(super) fn find(&self, hash: u64, key: &[u8]) -> Option<&Entry> {
        let i = self
            .index
            .find(hash, |&i| self.slot(i).is_some_and(|e| e.row.key() == key))?;
        self.slot(*i)
    }

    /// Forgets the entry under `key`; whether there was one.
    pub(super) fn remove(&mut self, hash: u64, key: &[u8]) -> bool {
        let slots = &self.slots;
        let found = self.index.find_entry(hash, |&i| {
            slots
                .get(i as usize)
                .and_then(Option::as_ref)
                .is_some_and(|e| e.row.key() == key)
        });
        let Ok(found) = found else {
            return false;
        };
        let (i, _) = found.remove();
        self.vacate(i);
        true
    }

    fn vacate(&mut self, i: u32) {
        if let Some(e) = self.slots.get_mut(i as usize).and_then(Option::take) {
            self.row_bytes = self.row_bytes.saturating_sub(e.row.heap_bytes());
            self.free.push(i);
        }
    }

    /// Stores `entry` (replacing one under the same key), evicting with the
    /// hand until everything fits `budget`. Returns how many entries the
    /// hand evicted, or `None` when it cannot fit at all (not stored).
    pub(super) fn insert(&mut self, entry: Entry, budget: usize) -> Option<u64> {
        let cost = entry.row.heap_bytes();
        self.remove(entry.hash, entry.row.key());
        let mut evicted = 0;
        // Room for the row: in a free slot, or in a slab grown by as much
        // as fits (doubled, else by an eighth), else after an eviction.
        let mut growth = 0;
        loop {
            let fits = |slots: usize| self.planned_bytes(slots, cost) <= budget;
            if !self.free.is_empty() || self.slots.len() < self.slots.capacity() {
                if fits(self.slots.capacity()) {
                    break;
                }
            } else {
                let cap = self.slots.capacity();
                if let Some(g) = [cap.max(4), (cap / 8).max(4)]
                    .into_iter()
                    .find(|g| fits(cap + g))
                {
                    growth = g;
                    break;
                }
            }
            if !self.evict_one() {
                // Nothing left to evict: the structure alone is too big.
                if self.free.is_empty() {
                    return None;
                }
                break;
            }
            evicted += 1;
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).ok()?;
                if self.slots.len() == self.slots.capacity() {
                    self.slots.reserve_exact(growth.max(1));
                    let cap = self.slots.capacity();
                    self.free.reserve_exact(cap.saturating_sub(self.free.len()));
                    self.reserve_index(cap);
                }
                self.slots.push(None);
                i
            }
        };
        let hash = entry.hash;
        self.row_bytes += cost;
        if let Some(slot) = self.slots.get_mut(i as usize) {
            *slot = Some(entry);
        }
        let slots = &self.slots;
        self.index.insert_unique(hash, i, |&j| rehash(slots, j));
        // A table whose spare room went to deleted marks grows on an
        // insert (hashbrown doubles it when more than half full): back to
        // the size planned for the slab, which drops the marks.
        if self.table_heap() > table_bytes(self.slots.capacity()) {
            let slots = &self.slots;
            self.index
                .shrink_to(self.slots.capacity(), |&j| rehash(slots, j));
        }
        while self.bytes() > budget && self.evict_one() {
            evicted += 1;
        }
        Some(evicted)
    }

    fn reserve_index(&mut self, capacity: usize) {
        let more = capacity.saturating_sub(self.index.len());
        let slots = &self.slots;
        self.index.reserve(more, |&j| rehash(slots, j));
    }

    /// Moves the hand to the next entry not read since it last passed and
    /// evicts it; `false` when the shard is empty.
    fn evict_one(&mut self) -> bool {
        if self.index.is_empty() {
            return false;
        }
        // Two turns at most: the first clears every mark.
        for _ in 0..=2 * self.slots.len() {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let i = self.hand;
            self.hand += 1;
            let Some(e) = self.slots.get(i).and_then(Option::as_ref) else {
                continue;
            };
            if e.referenced.swap(false, Ordering::Relaxed) {
                continue;
            }
            let hash = e.hash;
            let slot = i as u32;
            if let Ok(found) = self.index.find_entry(hash, |&j| j == slot) {
                found.remove();
            }
            self.vacate(slot);
            return true;
        }
        false
    }

    /// Every entry (tests).
    #[cfg(test)]
    pub(super) fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.slots.iter().flatten()
    }
}

fn rehash(slots: &[Option<Entry>], i: u32) -> u64 {
    slots
        .get(i as usize)
        .and_then(Option::as_ref)
        .map_or(0, |e| e.hash)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn entry(hasher: &std::collections::hash_map::RandomState, key: u32, len: usize) -> Entry {
        let key = key.to_le_bytes();
        let row = vec![Some(vec![b'x'; len].into_boxed_slice())];
        Entry {
            row: PackedRow::new(&key, &row).expect("packs"),
            hash: hasher.hash_one(key),
            table_epoch: 0,
            global_epoch: 0,
            born: 0,
            referenced: AtomicBool::new(false),
        }
    }

    #[test]
    fn entries_are_found_replaced_and_removed_by_key() {
        let h = Default::default();
        let mut m = ShardMap::default();
        for k in 0..100 {
            m.insert(entry(&h, k, 10), usize::MAX).expect("fits");
        }
        m.insert(entry(&h, 5, 20), usize::MAX).expect("fits");
        assert_eq!(m.len(), 100);
        let five = 5u32.to_le_bytes();
        let found = m.find(h.hash_one(five), &five).expect("found");
        assert_eq!(found.row.column(0).map(<[u8]>::len), Some(20));
        assert!(m.remove(h.hash_one(five), &five));
        assert!(!m.remove(h.hash_one(five), &five));
        assert!(m.find(h.hash_one(five), &five).is_none());
        assert_eq!(m.len(), 99);
    }

    #[test]
    fn the_count_stays_within_the_budget_and_the_hand_spares_what_is_read() {
        let h = Default::default();
        let budget = 64 * 1024;
        let mut m = ShardMap::default();
        let mut evicted = 0;
        for k in 0..5_000 {
            evicted += m.insert(entry(&h, k, 60), budget).expect("fits");
            assert!(m.bytes() <= budget, "{} > {budget}", m.bytes());
            // Keys 0..8 are read between the others.
            let hot = (k % 8).to_le_bytes();
            if let Some(e) = m.find(h.hash_one(hot), &hot) {
                e.referenced.store(true, Ordering::Relaxed);
            }
        }
        assert!(evicted > 4_000, "{evicted}");
        for k in 0..8u32 {
            let key = k.to_le_bytes();
            assert!(
                m.find(h.hash_one(key), &key).is_some(),
                "hot key {k} evicted"
            );
        }
        // About 170 bytes per entry of 60 bytes of values: more than
        // 300 of them fit in 64 KiB.
        assert!(m.len() > 300, "{} entries", m.len());
    }

    /// Heap bytes this thread holds, as glibc's malloc takes them: the
    /// count the shard keeps is checked against what it really holds.
    struct CountingAlloc;

    thread_local! {
        static LIVE: std::cell::Cell<isize> = const { std::cell::Cell::new(0) };
    }

    fn live() -> isize {
        LIVE.with(std::cell::Cell::get)
    }

    fn note(size: usize, sign: isize) {
        let block = heap_block(size) as isize;
        let _ = LIVE.try_with(|l| l.set(l.get() + sign * block));
    }

    // SAFETY: every call is passed on to the system allocator unchanged;
    // the thread-local count has no destructor and is only added to.
    unsafe impl std::alloc::GlobalAlloc for CountingAlloc {
        unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
            note(layout.size(), 1);
            // SAFETY: the caller's contract is the system allocator's.
            unsafe { std::alloc::System.alloc(layout) }
        }

        unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
            note(layout.size(), -1);
            // SAFETY: as above.
            unsafe { std::alloc::System.dealloc(ptr, layout) }
        }
    }

    #[global_allocator]
    static ALLOC: CountingAlloc = CountingAlloc;

    #[test]
    fn the_count_covers_every_byte_the_shard_holds() {
        let h = Default::default();
        for (budget, len) in [(256 * 1024, 70), (1024 * 1024, 10), (64 * 1024, 900)] {
            let before = live();
            let mut m = ShardMap::default();
            for k in 0..20_000 {
                m.insert(entry(&h, k, len), budget).expect("fits");
                if k % 997 == 0 {
                    let held = (live() - before) as usize;
                    assert!(held <= m.bytes(), "holds {held}, counted {}", m.bytes());
                }
            }
            let held = (live() - before) as usize;
            assert!(held <= m.bytes(), "holds {held}, counted {}", m.bytes());
            assert!(m.bytes() <= budget, "{} > {budget}", m.bytes());
            // The count is not generous either: most of it is held.
            assert!(
                held * 10 >= m.bytes() * 9,
                "holds {held}, counted {}",
                m.bytes()
            );
            eprintln!(
                "budget {budget}, values {len}: {} entries, {} bytes each",
                m.len(),
                m.bytes() / m.len().max(1)
            );
        }
    }

    #[test]
    fn a_row_larger_than_the_budget_is_not_stored() {
        let h = Default::default();
        let mut m = ShardMap::default();
        assert!(m.insert(entry(&h, 1, 4096), 1024).is_none());
        assert_eq!(m.len(), 0);
        assert!(m.bytes() <= 1024);
    }
}
