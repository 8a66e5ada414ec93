//! The row cache: rows that point lookups read (a whole unique key with
//! `=`), every column of each, kept in memory under a hard byte bound and
//! kept exact by evictions a change feed (MySQL's binary log reader) sends.
//! See docs/mysql.md, "The row cache".
//!
//! - `keys`: which keys may be cached (those whose bytes are equal exactly
//!   when the server finds them equal) and their encoding.
//! - `conn`: `CachedConn`, a storage connection that answers point lookups
//!   from the cache and fills it from the connection it wraps.
//!
//! Exactness rests on two rules. Leases: a fill takes one (the generation
//! of its key's shard, its table's and the whole cache's) before it reads
//! the server, and stores its row only if no eviction touched that shard,
//! table or cache meanwhile. An eviction bumps the generation under the
//! shard's lock, so a fill whose lease came before an eviction of its key
//! is discarded, whatever the interleaving. Ordered reads: the feed's
//! eviction can come before its commit is visible (the server sends a
//! transaction's binlog events before its storage engine commits it), so
//! a fill whose lease came after the eviction must still not read the row
//! from before that commit: fills read by `StorageConn::read_for_cache`,
//! which hands back only rows no uncommitted write touches (MySQL: a
//! locking read that does not wait). Reads take a shard's read lock: the
//! loops never wait for each other but on a fill or an eviction of the
//! same shard.

mod conn;
mod keys;
mod packed;
mod shard;
#[cfg(test)]
mod tests;

pub use self::conn::CachedConn;
pub use self::keys::ImageCell;
use self::keys::{cacheable_index, key_from_image, owner, set_owner, KeyBytes};
pub(crate) use self::packed::PackedRow;
use self::shard::{Entry, ShardMap};
use super::TableMeta;
use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// Whether the row cache answers lookups by a whole key of `index` of a
/// table like `meta` (a unique index of integer or variable-length binary
/// columns, see `keys`): where not, every lookup goes to the server.
pub fn serves_index(meta: &TableMeta, index: &super::IndexMeta) -> bool {
    cacheable_index(meta, index)
}

/// Shards of the map at most: enough that the loops rarely meet on one.
const MAX_SHARDS: usize = 64;
/// Bytes a shard holds at least: a small cache has fewer shards, so that
/// each still holds many rows.
const MIN_SHARD_BYTES: usize = 256 * 1024;

/// A row read to be cached.
pub(crate) type RowValues = super::OwnedRow;

/// A cached entry as tests see it: table, index, key parts, row.
#[cfg(test)]
pub(crate) type EntryDump = (String, usize, Vec<Vec<u8>>, Vec<Option<Vec<u8>>>);

/// A table the cache knows: its metadata as first opened, the generation
/// its entries were filled in (bumped when the table changes), and whether
/// it may be cached at all.
pub struct TableState {
    id: u32,
    meta: Arc<TableMeta>,
    epoch: AtomicU64,
    /// Whether the vetter found nothing the feed cannot see change it
    /// (nothing is cached before).
    vetted: AtomicBool,
}

impl TableState {
    pub fn db(&self) -> &str {
        &self.meta.db
    }

    pub fn name(&self) -> &str {
        &self.meta.name
    }
}

/// A cached entry the verifier checks against the server: its table, the
/// index and key it is cached under, and its row (`same` tells whether it
/// is still the very entry sampled).
pub struct Sample {
    pub table: Arc<TableState>,
    pub index: usize,
    key: KeyBytes,
    pub row: PackedRow,
    table_epoch: u64,
    global_epoch: u64,
}

impl Sample {
    /// The key's parts, as a lookup gives them.
    pub fn key_parts(&self) -> Vec<Vec<u8>> {
        keys::decode(&self.key)
    }
}

impl TableState {
    /// Its definition, as the cache knows it (the verifier reads by it).
    pub fn meta(&self) -> &Arc<TableMeta> {
        &self.meta
    }
}

/// Asked about each table before any of its rows is cached: whether
/// something the change feed does not show can change its rows (a foreign
/// key's cascade). It answers later with `RowCache::vetted`.
pub(crate) type Vetter = Box<dyn Fn(Arc<TableState>) + Send + Sync>;

/// One shard, on its own cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Shard {
    inner: RwLock<ShardMap>,
    /// Bumped (under the write lock) by every eviction of a key here.
    generation: AtomicU64,
    hits: AtomicU64,
    misses: AtomicU64,
}

/// A promise to store the row a fill is about to read: valid only if
/// nothing was evicted from its shard, table or cache since it was taken.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lease {
    shard: usize,
    generation: u64,
    table_epoch: u64,
    global_epoch: u64,
    stream_epoch: u64,
}

/// Counts an operator reads (`--admin-address`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    pub fills: u64,
    pub fills_discarded: u64,
    pub fills_held: u64,
    pub evictions_by_feed: u64,
    pub evictions_by_capacity: u64,
    pub entries: u64,
    pub bytes: u64,
    pub verified: u64,
    pub stale_found: u64,
}

pub struct RowCache {
    /// When the cache began (entries' ages count from it).
    began: std::time::Instant,
    /// `--row-cache-max-age`: entries older are not served.
    max_age: Option<u32>,
    shards: Box<[Shard]>,
    /// Bytes each shard may hold.
    shard_budget: usize,
    hasher: std::collections::hash_map::RandomState,
    /// By db, then by name.
    tables: RwLock<HashMap<String, HashMap<String, Arc<TableState>>>>,
    /// Tables never cached, with why (said once in the log).
    refused: Mutex<HashMap<(String, String), String>>,
    /// The verifier's counts: entries checked against the server, and
    /// entries found to differ where no change was logged; where its next
    /// sample is taken.
    verified: AtomicU64,
    stale_found: AtomicU64,
    next_sample: AtomicU64,
    /// Definitions a fill found outdated (a column it selects is gone):
    /// lookups through indexes opened under them are not cached.
    outdated: Mutex<HashMap<(String, String), Arc<TableMeta>>>,
    next_table: AtomicU64,
    /// Bumped when everything is dropped.
    global_epoch: AtomicU64,
    /// Whether the change feed is streaming; bumped (`stream_epoch`) each
    /// time it is lost, so that fills begun before are discarded.
    serving: AtomicBool,
    stream_epoch: AtomicU64,
    fills: AtomicU64,
    fills_discarded: AtomicU64,
    /// Fills not made: a writer held the row (`StorageConn::read_for_cache`).
    fills_held: AtomicU64,
    evictions_by_feed: AtomicU64,
    evictions_by_capacity: AtomicU64,
    vetter: Option<Vetter>,
    /// Writes this process finished (commits, and statements outside
    /// one): a read that arrives after a write was answered carries a
    /// count at least its number.
    writes: AtomicU64,
}

impl RowCache {
    /// A cache of at most `bytes` bytes (keys and bookkeeping included),
    /// not serving until its feed says it streams (`stream_started`).
    pub fn new(bytes: usize) -> RowCache {
        let shards = (bytes / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
        RowCache {
            began: std::time::Instant::now(),
            max_age: None,
            shards: (0..shards).map(|_| Shard::default()).collect(),
            shard_budget: bytes / shards,
            hasher: Default::default(),
            tables: RwLock::default(),
            refused: Mutex::default(),
            outdated: Mutex::default(),
            verified: AtomicU64::new(0),
            stale_found: AtomicU64::new(0),
            next_sample: AtomicU64::new(0),
            next_table: AtomicU64::new(1),
            global_epoch: AtomicU64::new(0),
            serving: AtomicBool::new(false),
            stream_epoch: AtomicU64::new(0),
            fills: AtomicU64::new(0),
            fills_discarded: AtomicU64::new(0),
            fills_held: AtomicU64::new(0),
            evictions_by_feed: AtomicU64::new(0),
            evictions_by_capacity: AtomicU64::new(0),
            vetter: None,
            writes: AtomicU64::new(0),
        }
    }

    /// Entries older than `seconds` are not served (`--row-cache-max-age`):
    /// what no binary log shows (a write with `sql_log_bin = 0`, a restore
    /// behind the server's back) is served for that long at most.
    pub fn with_max_age(self, seconds: Option<u32>) -> RowCache {
        RowCache {
            max_age: seconds,
            ..self
        }
    }

    /// Seconds since the cache began: entries' ages are counted in them.
    fn now(&self) -> u32 {
        u32::try_from(self.began.elapsed().as_secs()).unwrap_or(u32::MAX)
    }

    /// Tables are cached only once `vetter` has vetted them.
    pub fn with_vetter(self, vetter: Vetter) -> RowCache {
        RowCache {
            vetter: Some(vetter),
            ..self
        }
    }

    /// The vetter's answer on `table`: `None` when nothing the feed cannot
    /// see changes it, else why it is never cached.
    pub fn vetted(&self, table: &TableState, refused: Option<&str>) {
        match refused {
            None => table.vetted.store(true, Ordering::Release),
            Some(why) => self.refuse_table(table.db(), table.name(), why),
        }
    }

    /// A write of this process finished (whatever its outcome).
    pub(crate) fn note_write(&self) {
        self.writes.fetch_add(1, Ordering::AcqRel);
    }

    /// A fill was not made: a writer held its row.
    fn fill_held(&self) {
        self.fills_held.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes of this process finished so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Acquire)
    }

    /// Whether lookups may be answered from the cache: the feed streams.
    pub fn serving(&self) -> bool {
        self.serving.load(Ordering::Acquire)
    }

    /// The feed streams (again): every change from here on is evicted.
    /// What it missed meanwhile, it sends again or as `drop_all`.
    pub fn stream_started(&self) {
        self.serving.store(true, Ordering::Release);
    }

    /// The feed broke: nothing is served and fills under way are
    /// discarded until it streams again.
    pub fn stream_lost(&self) {
        self.serving.store(false, Ordering::Release);
        self.stream_epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// Never caches `db.table` (a foreign key's cascade can change it
    /// where the feed does not see), saying so once in the log.
    pub(crate) fn refuse_table(&self, db: &str, table: &str, why: &str) {
        let first = lock(&self.refused)
            .insert((db.to_string(), table.to_string()), why.to_string())
            .is_none();
        if first {
            tracing::info!("row cache: {db}.{table} is not cached: {why}");
        }
        self.forget_table(db, table);
    }

    /// The state of the table `meta` describes, registered on first use;
    /// `None` when it may not be cached or the cache knows it under
    /// another definition (it changed and the feed has not said so yet).
    fn table(&self, meta: &Arc<TableMeta>) -> Option<Arc<TableState>> {
        let found = read(&self.tables)
            .get(&meta.db)
            .and_then(|t| t.get(&meta.name))
            .cloned();
        let usable = |state: &Arc<TableState>| {
            state.vetted.load(Ordering::Acquire)
                && (Arc::ptr_eq(&state.meta, meta) || *state.meta == **meta)
        };
        if let Some(state) = found {
            return usable(&state).then_some(state);
        }
        let key = (meta.db.clone(), meta.name.clone());
        if lock(&self.refused).contains_key(&key) {
            return None;
        }
        if lock(&self.outdated)
            .get(&key)
            .is_some_and(|old| Arc::ptr_eq(old, meta) || **old == **meta)
        {
            return None;
        }
        let state = Arc::new(TableState {
            id: u32::try_from(self.next_table.fetch_add(1, Ordering::Relaxed)).ok()?,
            meta: meta.clone(),
            epoch: AtomicU64::new(0),
            vetted: AtomicBool::new(self.vetter.is_none()),
        });
        let (state, new) = {
            let mut tables = write(&self.tables);
            let db = tables.entry(key.0).or_default();
            match db.get(&key.1) {
                Some(s) => (s.clone(), false),
                None => {
                    db.insert(key.1, state.clone());
                    (state, true)
                }
            }
        };
        if let (true, Some(vetter)) = (new, &self.vetter) {
            vetter(state.clone());
        }
        usable(&state).then_some(state)
    }

    /// The key's hash, and its shard (from bits the shard's hash table
    /// does not use: its buckets take the low bits, its tags the top 7).
    fn locate(&self, key: &[u8]) -> (u64, usize) {
        let hash = self.hasher.hash_one(key);
        (hash, ((hash >> 32) as usize) % self.shards.len())
    }

    /// Names `key` as one of `table`'s index `index` (`false`: an index
    /// number the cache cannot hold).
    fn own(&self, table: &TableState, index: usize, key: &mut KeyBytes) -> bool {
        let Ok(index) = u16::try_from(index) else {
            return false;
        };
        set_owner(key, table.id, index);
        true
    }

    /// The row cached under `key` (owned by `table`), if it is current.
    fn get(&self, table: &TableState, key: &[u8]) -> Option<PackedRow> {
        let (hash, shard) = self.locate(key);
        let shard = &self.shards[shard];
        // An expired entry is a miss; its refill replaces it.
        let oldest = self.max_age.map(|age| self.now().saturating_sub(age));
        let found = {
            let map = read(&shard.inner);
            map.find(hash, key).and_then(|e| {
                let current = e.table_epoch == table.epoch.load(Ordering::Acquire)
                    && e.global_epoch == self.global_epoch.load(Ordering::Acquire)
                    && oldest.is_none_or(|oldest| e.born >= oldest);
                current.then(|| {
                    e.referenced.store(true, Ordering::Relaxed);
                    e.row.clone()
                })
            })
        };
        let counter = if found.is_some() {
            &shard.hits
        } else {
            &shard.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// A lease for filling `key`, taken before the server is read.
    fn lease(&self, table: &TableState, key: &[u8]) -> Option<Lease> {
        let (_, shard) = self.locate(key);
        // The order matters against `stream_lost`: the epoch is read
        // first, so a loss after it is seen by `fill`.
        let stream_epoch = self.stream_epoch.load(Ordering::Acquire);
        if !self.serving() {
            return None;
        }
        Some(Lease {
            shard,
            generation: self.shards[shard].generation.load(Ordering::Acquire),
            table_epoch: table.epoch.load(Ordering::Acquire),
            global_epoch: self.global_epoch.load(Ordering::Acquire),
            stream_epoch,
        })
    }

    /// Stores the row a fill read under `lease`, unless something was
    /// evicted since the lease was taken (then it is counted discarded).
    fn fill(&self, lease: Lease, table: &TableState, key: KeyBytes, row: RowValues) {
        let (hash, _) = self.locate(&key);
        let Some(row) = PackedRow::new(&key, &row) else {
            return;
        };
        if row.heap_bytes() > self.shard_budget {
            return;
        }
        let shard = &self.shards[lease.shard];
        let mut map = write(&shard.inner);
        let valid = shard.generation.load(Ordering::Acquire) == lease.generation
            && table.epoch.load(Ordering::Acquire) == lease.table_epoch
            && self.global_epoch.load(Ordering::Acquire) == lease.global_epoch
            && self.stream_epoch.load(Ordering::Acquire) == lease.stream_epoch;
        if !valid {
            self.fills_discarded.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let entry = Entry {
            row,
            hash,
            table_epoch: lease.table_epoch,
            global_epoch: lease.global_epoch,
            born: self.now(),
            referenced: AtomicBool::new(false),
        };
        if let Some(evicted) = map.insert(entry, self.shard_budget) {
            self.fills.fetch_add(1, Ordering::Relaxed);
            self.evictions_by_capacity
                .fetch_add(evicted, Ordering::Relaxed);
        }
    }

    /// Forgets `key` (a row with it changed): fills under way in its
    /// shard are discarded.
    fn evict(&self, key: KeyBytes) {
        let (hash, shard) = self.locate(&key);
        let shard = &self.shards[shard];
        let mut map = write(&shard.inner);
        shard.generation.fetch_add(1, Ordering::AcqRel);
        if map.remove(hash, &key) {
            self.evictions_by_feed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether anything of `db.table` may be cached: its entries, or a
    /// lookup on its way (which registers the table with its lease). A
    /// change committed while it is not is of no concern to the cache
    /// (`row_changed` says why), so a feed need not decode its rows.
    pub fn holds_table(&self, db: &str, table: &str) -> bool {
        read(&self.tables)
            .get(db)
            .is_some_and(|t| t.contains_key(table))
    }

    /// A row of `db.table` changed: `image` is its whole row before or
    /// after (one cell per column, in the table's order). Every cached
    /// unique key it has is evicted; a key the image does not tell drops
    /// the whole table.
    pub fn row_changed(&self, db: &str, table: &str, image: &[ImageCell<'_>]) {
        let Some(state) = read(&self.tables)
            .get(db)
            .and_then(|t| t.get(table))
            .cloned()
        else {
            // Nothing of it is cached. A first lookup on its way took its
            // lease after this (the table is registered with it) and
            // reads past the commit (`read_for_cache`).
            return;
        };
        let meta = &state.meta;
        if image.len() != meta.columns.len() {
            self.forget_table(db, table);
            return;
        }
        for (i, index) in meta.indexes.iter().enumerate() {
            if !cacheable_index(meta, index) {
                continue;
            }
            let Ok(i) = u16::try_from(i) else { continue };
            match key_from_image(index, image) {
                Ok(Some(mut key)) => {
                    set_owner(&mut key, state.id, i);
                    self.evict(key)
                }
                // A NULL in the key: such a key is never cached.
                Ok(None) => {}
                Err(()) => {
                    self.forget_table(db, table);
                    return;
                }
            }
        }
    }

    /// `db.table`'s definition or all its rows changed: its entries and
    /// metadata are forgotten.
    pub fn table_changed(&self, db: &str, table: &str) {
        // Vetted again when next used: the change may have dropped what
        // made it refused.
        lock(&self.refused).remove(&(db.to_string(), table.to_string()));
        self.forget_table(db, table);
    }

    fn forget_table(&self, db: &str, table: &str) {
        let removed = write(&self.tables)
            .get_mut(db)
            .and_then(|t| t.remove(table));
        if let Some(state) = removed {
            state.epoch.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// A fill of `table` failed for a column its definition names and the
    /// server no longer has (a DDL the client's opened index predates):
    /// its entries are forgotten and lookups under that definition go to
    /// the server as asked, which selects only the opened columns, until
    /// the index is opened again under the table's new definition.
    pub(crate) fn definition_outdated(&self, table: &TableState) {
        let key = (table.db().to_string(), table.name().to_string());
        let first = lock(&self.outdated)
            .insert(key, table.meta.clone())
            .is_none_or(|old| *old != *table.meta);
        if first {
            tracing::info!(
                "row cache: {}.{} changed under indexes opened before; lookups through them go \
                 to the server until they are opened again",
                table.db(),
                table.name()
            );
        }
        self.forget_table(table.db(), table.name());
    }

    /// A current entry to verify, from the shards in turn; `None` when
    /// the cache holds none (or does not serve).
    pub fn sample(&self) -> Option<Sample> {
        if !self.serving() {
            return None;
        }
        let turn = self.next_sample.fetch_add(1, Ordering::Relaxed) as usize;
        let global_epoch = self.global_epoch.load(Ordering::Acquire);
        let tables: HashMap<u32, Arc<TableState>> = read(&self.tables)
            .values()
            .flat_map(|t| t.values())
            .map(|t| (t.id, t.clone()))
            .collect();
        let n = self.shards.len();
        for k in 0..n {
            let shard = &self.shards[(turn + k) % n];
            let map = read(&shard.inner);
            // A different stretch of the slab each turn.
            let from = turn.wrapping_mul(61) / n;
            let current = |e: &Entry| {
                let (id, _) = owner(e.row.key());
                e.global_epoch == global_epoch
                    && tables
                        .get(&id)
                        .is_some_and(|t| t.epoch.load(Ordering::Acquire) == e.table_epoch)
            };
            if let Some(e) = map.pick(from, 64, current) {
                let (id, index) = owner(e.row.key());
                let table = tables.get(&id)?.clone();
                return Some(Sample {
                    table,
                    index: usize::from(index),
                    key: e.row.key().into(),
                    row: e.row.clone(),
                    table_epoch: e.table_epoch,
                    global_epoch: e.global_epoch,
                });
            }
        }
        None
    }

    /// Whether the very entry `sample` took is still cached and current:
    /// no eviction, refill or table change came since.
    pub fn still_holds(&self, sample: &Sample) -> bool {
        let (hash, shard) = self.locate(&sample.key);
        let map = read(&self.shards[shard].inner);
        map.find(hash, &sample.key).is_some_and(|e| {
            e.row.same(&sample.row)
                && e.table_epoch == sample.table_epoch
                && e.global_epoch == sample.global_epoch
                && sample.table.epoch.load(Ordering::Acquire) == sample.table_epoch
                && self.global_epoch.load(Ordering::Acquire) == sample.global_epoch
        })
    }

    /// The verifier compared an entry with the server (`stale`: they
    /// differ, though the feed showed no change of the row since the entry
    /// was filled). A stale entry drops its table's entries, said in the log.
    pub fn verified(&self, sample: &Sample, stale: bool) {
        self.verified.fetch_add(1, Ordering::Relaxed);
        if !stale {
            return;
        }
        self.stale_found.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(
            "row cache: the verifier found a cached row of {}.{} that differs from the server \
             although the binary log showed no change of it (a write with sql_log_bin = 0, a \
             restore, a change no binary log carries): the table's entries are dropped",
            sample.table.db(),
            sample.table.name()
        );
        self.forget_table(sample.table.db(), sample.table.name());
    }

    /// Anything may have changed: every entry and table is forgotten.
    pub fn drop_all(&self) {
        self.global_epoch.fetch_add(1, Ordering::AcqRel);
        lock(&self.refused).clear();
        for state in write(&self.tables)
            .drain()
            .flat_map(|(_, t)| t.into_values())
        {
            state.epoch.fetch_add(1, Ordering::AcqRel);
        }
        for shard in self.shards.iter() {
            let mut map = write(&shard.inner);
            shard.generation.fetch_add(1, Ordering::AcqRel);
            *map = ShardMap::default();
        }
    }

    pub fn stats(&self) -> CacheStats {
        let mut s = CacheStats {
            fills: self.fills.load(Ordering::Relaxed),
            fills_discarded: self.fills_discarded.load(Ordering::Relaxed),
            fills_held: self.fills_held.load(Ordering::Relaxed),
            evictions_by_feed: self.evictions_by_feed.load(Ordering::Relaxed),
            evictions_by_capacity: self.evictions_by_capacity.load(Ordering::Relaxed),
            verified: self.verified.load(Ordering::Relaxed),
            stale_found: self.stale_found.load(Ordering::Relaxed),
            ..CacheStats::default()
        };
        for shard in self.shards.iter() {
            s.hits += shard.hits.load(Ordering::Relaxed);
            s.misses += shard.misses.load(Ordering::Relaxed);
            let map = read(&shard.inner);
            s.entries += map.len() as u64;
            s.bytes += map.bytes() as u64;
        }
        s
    }

    /// Every current entry, for tests that compare them with the table:
    /// (table, index, key parts, row).
    #[cfg(test)]
    pub(crate) fn entries(&self) -> Vec<EntryDump> {
        let tables: Vec<Arc<TableState>> = read(&self.tables)
            .values()
            .flat_map(|t| t.values().cloned())
            .collect();
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            for e in read(&shard.inner).entries() {
                let k = e.row.key();
                let (table, index) = keys::owner(k);
                let Some(t) = tables.iter().find(|t| t.id == table) else {
                    continue;
                };
                if e.table_epoch != t.epoch.load(Ordering::Acquire)
                    || e.global_epoch != self.global_epoch.load(Ordering::Acquire)
                {
                    continue;
                }
                out.push((
                    t.meta.name.clone(),
                    usize::from(index),
                    keys::decode(k),
                    e.row.values(),
                ));
            }
        }
        out
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|p| p.into_inner())
}
