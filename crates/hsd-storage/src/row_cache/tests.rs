//! The row cache on the storage test seam: answers as the storage's, the
//! fill/eviction race (a fill that read a row before a write whose
//! eviction came first must not be stored), keys it must not hold, the
//! memory bound, an eviction that comes before its commit is visible (as
//! the server sends a transaction's binlog events before its engine
//! commit: `Server` holds the writer's row locks until then, and fills
//! read through `read_for_cache`, which hands back no row a writer
//! holds), and a random interleaving of fills, prepared writes, commits
//! and evictions checked against the table whenever both have caught up.

use super::{CachedConn, ImageCell, RowCache};
use crate::memory::{table_meta, Col, Idx, MemoryConn, MemoryStore};
use crate::{
    Backend, FilterMode, OpenedIndex, RowView, RowVisitor, Scan, ScanStep, StorageConn,
    StorageError, TableMeta, WriteBatching,
};
use hs_proto::FindOp;
use std::cell::RefCell;
use std::collections::HashSet;
use std::rc::Rc;
use std::sync::Arc;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime")
}

fn meta() -> TableMeta {
    table_meta(
        "db",
        "t",
        &[
            Col {
                name: "id",
                integer: true,
                nullable: false,
            },
            Col {
                name: "v",
                integer: false,
                nullable: true,
            },
            Col {
                name: "w",
                integer: true,
                nullable: true,
            },
        ],
        &[
            Idx {
                name: "PRIMARY",
                columns: &["id"],
                unique: true,
            },
            Idx {
                name: "w",
                columns: &["w"],
                unique: true,
            },
        ],
        None,
    )
}

/// Rows `(id, v, w)`: `w` is `id * 10`, `v` the value given.
fn rows(values: &[(u32, &str)]) -> Vec<Vec<Option<String>>> {
    values
        .iter()
        .map(|(id, v)| {
            vec![
                Some(id.to_string()),
                Some(v.to_string()),
                Some((id * 10).to_string()),
            ]
        })
        .collect()
}

fn set_rows(store: &MemoryStore, rows: &[Vec<Option<String>>]) {
    let rows: Vec<Vec<Option<&str>>> = rows
        .iter()
        .map(|r| r.iter().map(|v| v.as_deref()).collect())
        .collect();
    store.add_table(meta(), &rows);
}

fn image(row: &[Option<String>]) -> Vec<ImageCell<'_>> {
    row.iter()
        .map(|v| match v {
            Some(v) => ImageCell::Value(v.as_bytes()),
            None => ImageCell::Null,
        })
        .collect()
}

struct Fixture {
    store: MemoryStore,
    cache: Arc<RowCache>,
    /// `v` by the primary key, `v` and `id` by `w`.
    by_id: OpenedIndex,
    by_w: OpenedIndex,
}

fn fixture(bytes: usize) -> Fixture {
    let store = MemoryStore::new(WriteBatching::OneAtATime);
    let table = store.add_table(meta(), &[]);
    set_rows(&store, &rows(&[(1, "a"), (2, "b"), (3, "c")]));
    let cache = Arc::new(RowCache::new(bytes));
    cache.stream_started();
    let open = |id, index, columns: Vec<usize>| OpenedIndex {
        id,
        table: table.clone(),
        index,
        columns,
        filter_columns: Vec::new(),
    };
    Fixture {
        store,
        cache,
        by_id: open(1, 0, vec![1]),
        by_w: open(2, 1, vec![1, 0]),
    }
}

fn point<'a>(index: &'a OpenedIndex, key: &'a str) -> Scan<'a> {
    Scan {
        index,
        op: FindOp::Eq,
        keys: vec![Some(key.as_bytes())],
        filters: &[],
        filter_mode: FilterMode::None,
        fetch: 1,
        with_locator: false,
        after: None,
    }
}

/// Rows each scan answered, as `scan:value,value` lines.
async fn answers(conn: &mut impl StorageConn, scans: &[Scan<'_>]) -> Vec<String> {
    let mut out = Vec::new();
    let mut visit = |i: usize, row: &dyn RowView| {
        let n = scans[i].index.columns.len();
        let values: Vec<String> = (0..n)
            .map(|c| {
                row.column(c)
                    .map_or("NULL".into(), |v| String::from_utf8_lossy(v).into_owned())
            })
            .collect();
        out.push(format!("{i}:{}", values.join(",")));
        ScanStep::Continue
    };
    conn.scan_many(scans, &mut visit).await.expect("scan");
    out
}

/// Ids of rows a writer holds: its transaction is prepared (its binlog
/// events may already be out) and not yet committed, so the store still
/// shows the rows as they were.
type Held = Rc<RefCell<HashSet<u32>>>;

/// The server as the cache meets it: a plain read shows the committed
/// rows, a read for the cache (a locking read that does not wait) hands
/// back nothing for a row a writer holds. `between` runs once after the
/// storage answered and before the caller gets control back: a write
/// committed, and its eviction delivered, while a fill's row is on its way.
struct Server<F: FnMut()> {
    inner: MemoryConn,
    held: Held,
    between: Option<F>,
}

fn server(inner: MemoryConn, held: &Held) -> Server<fn()> {
    Server {
        inner,
        held: held.clone(),
        between: None,
    }
}

impl<F: FnMut()> Server<F> {
    fn after_answer(&mut self) {
        if let Some(mut f) = self.between.take() {
            f();
        }
    }
}

impl<F: FnMut()> StorageConn for Server<F> {
    async fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        self.inner.describe(db, table).await
    }
    async fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        let done = self.inner.scan_many(scans, visit).await;
        self.after_answer();
        done
    }
    async fn read_for_cache(
        &mut self,
        scans: &[Scan<'_>],
    ) -> Result<Vec<crate::CacheRead>, StorageError> {
        let mut read = self.inner.read_for_cache(scans).await?;
        for r in &mut read {
            // Every column is opened: the first is `id`.
            let held = r.as_ref().is_some_and(|rows| {
                rows.iter().any(|row| {
                    let id = row.first().and_then(|v| v.as_deref());
                    let id = id.and_then(|v| std::str::from_utf8(v).ok());
                    id.and_then(|v| v.parse().ok())
                        .is_some_and(|id: u32| self.held.borrow().contains(&id))
                })
            });
            if held {
                *r = None;
            }
        }
        self.after_answer();
        Ok(read)
    }
    fn write_batching(&self) -> WriteBatching {
        self.inner.write_batching()
    }
    async fn insert_rows(
        &mut self,
        rows: &[crate::RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>> {
        self.inner.insert_rows(rows).await
    }
    async fn write_rows(
        &mut self,
        writes: &[crate::RowWrite<'_>],
    ) -> Vec<Result<u64, StorageError>> {
        self.inner.write_rows(writes).await
    }
    async fn begin(&mut self) -> Result<(), StorageError> {
        self.inner.begin().await
    }
    async fn commit(&mut self) -> crate::Committed {
        self.inner.commit().await
    }
    async fn rollback(&mut self) {
        self.inner.rollback().await
    }
}

#[test]
fn a_fill_that_read_before_an_eviction_of_its_key_is_discarded() {
    let rt = rt();
    let f = fixture(1 << 20);
    let before = rows(&[(1, "a")]);
    let after = rows(&[(1, "z")]);
    let store = f.store.clone();
    let cache = f.cache.clone();
    let write_and_evict = || {
        set_rows(&store, &rows(&[(1, "z"), (2, "b"), (3, "c")]));
        cache.row_changed("db", "t", &image(&before[0]));
        cache.row_changed("db", "t", &image(&after[0]));
    };
    let inner = rt.block_on(f.store.connect()).expect("connect");
    let mut racing = CachedConn::new(
        Server {
            inner,
            held: Held::default(),
            between: Some(write_and_evict),
        },
        f.cache.clone(),
    );
    let first = rt.block_on(answers(&mut racing, &[point(&f.by_id, "1")]));
    assert_eq!(first, ["0:a"], "the fill's read came before the write");
    assert_eq!(f.cache.stats().fills_discarded, 1);
    let mut conn = CachedConn::new(
        rt.block_on(f.store.connect()).expect("connect"),
        f.cache.clone(),
    );
    for _ in 0..2 {
        let again = rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
        assert_eq!(again, ["0:z"], "a stale row was stored by a late fill");
    }
    let s = f.cache.stats();
    assert_eq!((s.hits, s.fills), (1, 1), "{s:?}");
}

/// The server sends a transaction's binlog events before its engine
/// commit: the eviction comes first, and a fill between it and the commit
/// (its lease taken after the eviction) reads the row from before the
/// change. Such a row must not be stored, by either unique key, nor after
/// the table or everything was dropped; once the writer committed, the
/// rows are filled again. (A fill that reads plainly stores "a" here and
/// serves it after the commit.)
#[test]
fn a_fill_between_an_eviction_and_its_commit_is_not_stored() {
    let rt = rt();
    let f = fixture(1 << 20);
    let held = Held::default();
    let mut conn = CachedConn::new(
        server(rt.block_on(f.store.connect()).expect("connect"), &held),
        f.cache.clone(),
    );
    // The table is known: a row not evicted is filled and served.
    for _ in 0..2 {
        let two = rt.block_on(answers(&mut conn, &[point(&f.by_id, "2")]));
        assert_eq!(two, ["0:b"]);
    }
    assert_eq!((f.cache.stats().fills, f.cache.stats().hits), (1, 1));
    // A writer changes row 1 and holds it; its events reach the feed
    // before its commit.
    held.borrow_mut().insert(1);
    let before = rows(&[(1, "a")]);
    let after = rows(&[(1, "z")]);
    f.cache.row_changed("db", "t", &image(&before[0]));
    f.cache.row_changed("db", "t", &image(&after[0]));
    for _ in 0..2 {
        let by_id = rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
        let by_w = rt.block_on(answers(&mut conn, &[point(&f.by_w, "10")]));
        assert_eq!(
            (by_id, by_w),
            (vec!["0:a".to_string()], vec!["0:a,1".to_string()]),
            "not committed yet: the row before the change"
        );
    }
    assert_eq!(f.cache.stats().fills_held, 4, "{:?}", f.cache.stats());
    // The commit: visible, the lock gone; the feed sends nothing more.
    set_rows(&f.store, &rows(&[(1, "z"), (2, "b"), (3, "c")]));
    held.borrow_mut().clear();
    for _ in 0..2 {
        let by_id = rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
        let by_w = rt.block_on(answers(&mut conn, &[point(&f.by_w, "10")]));
        assert_eq!(
            (by_id, by_w),
            (vec!["0:z".to_string()], vec!["0:z,1".to_string()]),
            "a row read before the commit was stored"
        );
    }
    let s = f.cache.stats();
    assert_eq!(
        (s.fills, s.hits),
        (3, 3),
        "filled again after the commit: {s:?}"
    );

    // The table forgotten, or everything dropped, while a writer holds
    // row 3: its old row is not filled; the others are.
    let dropped: [Box<dyn Fn()>; 2] = [
        Box::new(|| f.cache.table_changed("db", "t")),
        Box::new(|| f.cache.drop_all()),
    ];
    let mut current = "c".to_string();
    for (n, drop) in dropped.iter().enumerate() {
        held.borrow_mut().insert(3);
        drop();
        let fills = f.cache.stats().fills;
        let three = rt.block_on(answers(&mut conn, &[point(&f.by_id, "3")]));
        assert_eq!(three, [format!("0:{current}")]);
        assert_eq!(f.cache.stats().fills, fills, "a held row was filled");
        let value = format!("c{n}");
        set_rows(&f.store, &rows(&[(1, "z"), (2, "b"), (3, &value)]));
        held.borrow_mut().clear();
        for _ in 0..2 {
            let three = rt.block_on(answers(&mut conn, &[point(&f.by_id, "3")]));
            assert_eq!(three, [format!("0:{value}")]);
        }
        assert_eq!(f.cache.stats().fills, fills + 1);
        current = value;
    }
}

/// An event on a table the cache does not know yet (its first lookup is
/// on its way): the lookup reads past the writer or stores nothing.
#[test]
fn an_event_before_a_tables_first_lookup_stores_no_old_row() {
    let rt = rt();
    let f = fixture(1 << 20);
    let held = Held::default();
    let mut conn = CachedConn::new(
        server(rt.block_on(f.store.connect()).expect("connect"), &held),
        f.cache.clone(),
    );
    held.borrow_mut().insert(1);
    f.cache
        .row_changed("db", "t", &image(&rows(&[(1, "z")])[0]));
    let first = rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
    assert_eq!(first, ["0:a"], "the commit is not visible yet");
    set_rows(&f.store, &rows(&[(1, "z"), (2, "b"), (3, "c")]));
    held.borrow_mut().clear();
    let again = rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
    assert_eq!(again, ["0:z"], "a row read before the commit was stored");
}

#[test]
fn hits_answer_as_the_storage_does_in_scan_order() {
    let rt = rt();
    let f = fixture(1 << 20);
    let mut plain = rt.block_on(f.store.connect()).expect("connect");
    let mut conn = CachedConn::new(
        rt.block_on(f.store.connect()).expect("connect"),
        f.cache.clone(),
    );
    let scans = [
        point(&f.by_id, "2"),
        point(&f.by_w, "10"),
        point(&f.by_id, "9"),
        point(&f.by_id, "3"),
        point(&f.by_w, "30"),
    ];
    let want = rt.block_on(answers(&mut plain, &scans));
    assert_eq!(want, ["0:b", "1:a,1", "3:c", "4:c,3"]);
    // Cold, warm, then half warm: hits and the server's rows interleave.
    assert_eq!(rt.block_on(answers(&mut conn, &scans)), want);
    assert_eq!(rt.block_on(answers(&mut conn, &scans)), want);
    let s = f.cache.stats();
    assert_eq!((s.hits, s.entries), (4, 4), "{s:?}");
    f.cache.table_changed("db", "t");
    let mixed = [
        point(&f.by_id, "1"),
        point(&f.by_id, "2"),
        point(&f.by_w, "20"),
    ];
    let want = rt.block_on(answers(&mut plain, &mixed));
    rt.block_on(answers(&mut conn, &mixed[1..2]));
    assert_eq!(rt.block_on(answers(&mut conn, &mixed)), want);
}

#[test]
fn keys_the_server_may_find_equal_otherwise_are_not_cached() {
    let rt = rt();
    let f = fixture(1 << 20);
    let mut conn = CachedConn::new(
        rt.block_on(f.store.connect()).expect("connect"),
        f.cache.clone(),
    );
    // `007` finds row 7's neighbour by value on the server: never a key.
    set_rows(&f.store, &rows(&[(1, "a"), (7, "g")]));
    for key in ["007", "+7", "07"] {
        let got = rt.block_on(answers(&mut conn, &[point(&f.by_id, key)]));
        assert_eq!(got, ["0:g"], "{key}");
    }
    // A lookup that found nothing is not remembered.
    rt.block_on(answers(&mut conn, &[point(&f.by_id, "8")]));
    assert_eq!(f.cache.stats().entries, 0);
    set_rows(&f.store, &rows(&[(1, "a"), (7, "g"), (8, "h")]));
    let got = rt.block_on(answers(&mut conn, &[point(&f.by_id, "8")]));
    assert_eq!(got, ["0:h"]);
    // A change whose key the feed could not tell drops the whole table.
    rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
    assert!(f.cache.stats().entries >= 2);
    f.cache.row_changed(
        "db",
        "t",
        &[ImageCell::Unknown, ImageCell::Null, ImageCell::Null],
    );
    assert!(f.cache.entries().is_empty());
}

#[test]
fn a_lost_feed_stops_serving_and_discards_fills_until_it_streams_again() {
    let rt = rt();
    let f = fixture(1 << 20);
    let mut conn = CachedConn::new(
        rt.block_on(f.store.connect()).expect("connect"),
        f.cache.clone(),
    );
    rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
    f.cache.stream_lost();
    set_rows(&f.store, &rows(&[(1, "z")]));
    let got = rt.block_on(answers(&mut conn, &[point(&f.by_id, "1")]));
    assert_eq!(
        got,
        ["0:z"],
        "served from the cache while the feed was lost"
    );
    let cache = f.cache.clone();
    let inner = rt.block_on(f.store.connect()).expect("connect");
    let mut racing = CachedConn::new(
        Server {
            inner,
            held: Held::default(),
            between: Some(|| cache.stream_lost()),
        },
        f.cache.clone(),
    );
    f.cache.stream_started();
    f.cache.drop_all();
    rt.block_on(answers(&mut racing, &[point(&f.by_id, "1")]));
    assert_eq!(
        f.cache.stats().entries,
        0,
        "a fill across a lost feed was kept"
    );
}

#[test]
fn memory_stays_within_its_bound_and_keeps_what_is_read() {
    let rt = rt();
    let bound = 16 * 1024;
    let f = fixture(bound);
    let many: Vec<(u32, String)> = (1..=600).map(|i| (i, "x".repeat(100))).collect();
    let many: Vec<(u32, &str)> = many.iter().map(|(i, v)| (*i, v.as_str())).collect();
    set_rows(&f.store, &rows(&many));
    let mut conn = CachedConn::new(
        rt.block_on(f.store.connect()).expect("connect"),
        f.cache.clone(),
    );
    for i in 1..=600 {
        let key = i.to_string();
        rt.block_on(answers(&mut conn, &[point(&f.by_id, &key)]));
        // A small hot set read between the others stays.
        let hot = (i % 8 + 1).to_string();
        rt.block_on(answers(&mut conn, &[point(&f.by_id, &hot)]));
        assert!(f.cache.stats().bytes <= bound as u64);
    }
    let s = f.cache.stats();
    assert!(s.evictions_by_capacity > 0, "{s:?}");
    assert!(s.hits > 500, "the hot set was evicted: {s:?}");
}

/// A small xorshift generator: the same interleavings on every run.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Writes as the server makes them: a writer takes its row (held), its
/// binlog events go out (the evictions, delivered later), and its commit
/// makes the change visible and lets the row go, before or after the
/// evictions are delivered. Fills race both.
#[test]
fn random_fills_writes_commits_and_evictions_never_leave_a_stale_row() {
    let rt = rt();
    let f = fixture(8 * 1024);
    // Committed values, by id - 1.
    let table = RefCell::new((1..=20).map(|i| format!("v{i}")).collect::<Vec<_>>());
    let apply = || {
        let t = table.borrow();
        let t: Vec<(u32, &str)> = (1..).zip(t.iter().map(String::as_str)).collect();
        set_rows(&f.store, &rows(&t));
    };
    apply();
    let held = Held::default();
    // Evictions not delivered yet (row images before and after), and
    // prepared writes not committed yet (id, new value), oldest first.
    let evictions = RefCell::new(std::collections::VecDeque::<Vec<Vec<Option<String>>>>::new());
    let commits = RefCell::new(std::collections::VecDeque::<(u32, String)>::new());
    let deliver = |n: usize| {
        for _ in 0..n {
            let Some(images) = evictions.borrow_mut().pop_front() else {
                return;
            };
            for im in &images {
                f.cache.row_changed("db", "t", &image(im));
            }
        }
    };
    let commit = |n: usize| {
        for _ in 0..n {
            let Some((id, value)) = commits.borrow_mut().pop_front() else {
                return;
            };
            table.borrow_mut()[id as usize - 1] = value;
            apply();
            held.borrow_mut().remove(&id);
        }
    };
    let mut rng = Random(0x9e37_79b9_7f4a_7c15);
    let mut checked = 0;
    for step in 0..6000 {
        let id = rng.below(20) as u32 + 1;
        match rng.below(5) {
            0 if !held.borrow().contains(&id) => {
                held.borrow_mut().insert(id);
                let value = format!("s{step}");
                let before = rows(&[(id, &table.borrow()[id as usize - 1])]);
                let after = rows(&[(id, &value)]);
                commits.borrow_mut().push_back((id, value));
                evictions
                    .borrow_mut()
                    .push_back(vec![before[0].clone(), after[0].clone()]);
            }
            0 => {}
            1 => deliver(rng.below(3) as usize + 1),
            2 => commit(rng.below(2) as usize + 1),
            _ => {
                // A lookup whose fill may meet evictions and commits.
                let (n, m) = (rng.below(3) as usize, rng.below(2) as usize);
                let inner = rt.block_on(f.store.connect()).expect("connect");
                let mut conn = CachedConn::new(
                    Server {
                        inner,
                        held: held.clone(),
                        between: Some(|| {
                            deliver(n);
                            commit(m);
                        }),
                    },
                    f.cache.clone(),
                );
                let (index, key) = if rng.below(2) == 0 {
                    (&f.by_id, id.to_string())
                } else {
                    (&f.by_w, (id * 10).to_string())
                };
                rt.block_on(answers(&mut conn, &[point(index, &key)]));
            }
        }
        if evictions.borrow().is_empty() && commits.borrow().is_empty() {
            // The feed and the writers have caught up: every answer and
            // entry is current.
            let mut conn = CachedConn::new(
                server(rt.block_on(f.store.connect()).expect("connect"), &held),
                f.cache.clone(),
            );
            let got = rt.block_on(answers(&mut conn, &[point(&f.by_id, &id.to_string())]));
            let want = table.borrow()[id as usize - 1].clone();
            assert_eq!(got, [format!("0:{want}")], "step {step}");
            for (_, index, key, row) in f.cache.entries() {
                let k: u32 = String::from_utf8_lossy(&key[0]).parse().expect("key");
                let id = if index == 0 { k } else { k / 10 };
                let want = rows(&[(id, &table.borrow()[id as usize - 1])]);
                let want: Vec<Option<Vec<u8>>> = want[0]
                    .iter()
                    .map(|v| v.clone().map(String::into_bytes))
                    .collect();
                assert_eq!(row, want, "step {step}: a stale entry");
                checked += 1;
            }
        }
    }
    let s = f.cache.stats();
    assert!(
        checked > 500 && s.hits > 100 && s.fills_discarded > 10,
        "{checked} {s:?}"
    );
}

/// `--row-cache-max-age`: an entry older than the bound is a miss and is
/// read again from the server, which may have changed where no feed shows
/// (here: the store changed and no eviction came).
#[test]
fn an_entry_past_its_max_age_is_read_again() {
    let rt = rt();
    let store = MemoryStore::new(WriteBatching::OneAtATime);
    let table = store.add_table(meta(), &[]);
    set_rows(&store, &rows(&[(1, "a")]));
    let cache = Arc::new(RowCache::new(1 << 20).with_max_age(Some(0)));
    cache.stream_started();
    let by_id = OpenedIndex {
        id: 1,
        table,
        index: 0,
        columns: vec![1],
        filter_columns: Vec::new(),
    };
    let mut conn = CachedConn::new(
        rt.block_on(store.connect()).expect("connect"),
        cache.clone(),
    );
    assert_eq!(
        rt.block_on(answers(&mut conn, &[point(&by_id, "1")])),
        ["0:a"]
    );
    // Unseen by the feed: the cached row is now stale.
    set_rows(&store, &rows(&[(1, "z")]));
    // Within the same second the entry is served as it is...
    let same_second = rt.block_on(answers(&mut conn, &[point(&by_id, "1")]));
    if cache.stats().hits == 1 {
        assert_eq!(same_second, ["0:a"]);
    }
    // ...and once it is older than the bound, read again.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(
        rt.block_on(answers(&mut conn, &[point(&by_id, "1")])),
        ["0:z"]
    );
    assert_eq!(cache.stats().fills, 2, "the expired entry was filled again");
}
