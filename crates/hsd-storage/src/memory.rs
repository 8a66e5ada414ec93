//! The storage test seam: an in-memory backend over sorted maps, for unit
//! tests of the executor, the group committer and the read batcher without
//! a database. It keeps HandlerSocket's order and comparison rules as the
//! SQL backends express them (NULL lowest and equal to NULL, integers by
//! value, everything else byte by byte, equal keys in row order), records
//! every call it is asked for, and answers busy, a deadlock or a lost link
//! at a chosen call, the way the real backends report them: busy changes
//! nothing, a deadlock or a lost link rolls the whole group back. Its read
//! router (`router::FakeRouter`) gives it several places to read from, each
//! of which can be made unreachable. Groups of several connections may be
//! open at once: each works on its own copy and its commit applies the rows
//! it changed, row by row (no row locks: tests of concurrent groups change
//! different existing rows). Commits can be held (`hold_commits`) to see
//! what runs while a COMMIT waits.

mod router;

pub(crate) use self::router::FakeRouter;
use super::values::stored_integer;
use super::{
    Backend, Change, ColumnKind, ColumnMeta, CommitFailure, Committed, FilterMode, FilterVerdict,
    IndexMeta, IntRead, LongReads, ReadPlacement, ReadSide, RowInsert, RowTarget, RowView,
    RowVisitor, RowWrite, Scan, ScanStep, StorageConn, StorageError, TableMeta, WriteBatching,
    WriteForm, WriteValue, ERR_DUPLICATE_KEY, ERR_LOCK_DEADLOCK,
};
use hs_proto::{FilterKind, FilterOp, FindOp, Value};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// What a call is made to answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The db is locked by another writer: nothing done, try later.
    Busy,
    /// The server broke a deadlock by rolling the group back.
    Deadlock,
    /// The connection broke: the group is rolled back.
    LostLink,
}

/// A column of a test table: its name, whether it holds integers, whether
/// it may be NULL.
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub name: &'static str,
    pub integer: bool,
    pub nullable: bool,
}

/// An index of a test table: name (`PRIMARY` first), key columns, unique.
#[derive(Debug, Clone, Copy)]
pub struct Idx {
    pub name: &'static str,
    pub columns: &'static [&'static str],
    pub unique: bool,
}

/// The metadata of a test table, as a SQL backend would describe it; rows
/// are located by their row number (`rowid`). `auto` names the
/// auto-increment column.
pub fn table_meta(
    db: &str,
    name: &str,
    cols: &[Col],
    idxs: &[Idx],
    auto: Option<&str>,
) -> TableMeta {
    let position = |c: &str| cols.iter().position(|x| x.name == c);
    TableMeta {
        db: db.into(),
        name: name.into(),
        columns: cols
            .iter()
            .map(|c| ColumnMeta {
                name: c.name.into(),
                name_sql: c.name.into(),
                select_sql: c.name.into(),
                is_blob: false,
                kind: if c.integer {
                    ColumnKind::Integer {
                        min: i128::from(i64::MIN),
                        max: i128::from(i64::MAX),
                    }
                } else {
                    ColumnKind::Text {
                        charset: "binary".into(),
                        max_chars: 1 << 20,
                    }
                },
                nullable: c.nullable,
                auto_increment: auto == Some(c.name),
                zero_on_insert: false,
                int_read: if c.integer {
                    IntRead::Integer
                } else {
                    IntRead::Text
                },
                write_form: WriteForm::Plain,
                locate: Default::default(),
            })
            .collect(),
        indexes: idxs
            .iter()
            .map(|i| IndexMeta {
                name: i.name.into(),
                key_sql: i.columns.iter().map(|c| c.to_string()).collect(),
                key_columns: i.columns.iter().map(|c| position(c)).collect(),
                key_prefix: Vec::new(),
                tiebreak_sql: vec!["rowid".into()],
                tiebreak_columns: vec![None],
                from_sql: name.into(),
                unique: i.unique,
                ordered: true,
                hash: false,
            })
            .collect(),
        locator_sql: vec!["rowid".into()],
        table_sql: name.into(),
        has_autoincrement: auto.is_some(),
        transactional: true,
    }
}

/// A table's rows by row number.
#[derive(Debug, Clone)]
struct Table {
    meta: Arc<TableMeta>,
    rows: BTreeMap<u64, Vec<Value>>,
    next_rowid: u64,
    next_id: i64,
}

type Tables = BTreeMap<(String, String), Table>;

#[derive(Default)]
struct State {
    committed: Tables,
    calls: u64,
    faults: Vec<(u64, Fault)>,
    /// Places whose every call fails as a lost link.
    unreachable: Vec<usize>,
    log: Vec<String>,
    /// While set, each commit waits for a permit of it (`hold_commits`).
    commit_gate: Option<Arc<tokio::sync::Semaphore>>,
}

/// The backend: every connection it makes shares its tables.
#[derive(Clone)]
pub struct MemoryStore {
    state: Arc<Mutex<State>>,
    batching: WriteBatching,
    /// Routes the read side's finds; the write side's have one place.
    router: Arc<FakeRouter>,
}

impl MemoryStore {
    pub fn new(batching: WriteBatching) -> MemoryStore {
        MemoryStore {
            state: Arc::default(),
            batching,
            router: Arc::new(FakeRouter::new(1)),
        }
    }

    /// The store whose read side routes its finds over `places` places
    /// (see `FakeRouter`), each holding the same tables.
    pub fn with_places(self, places: usize) -> MemoryStore {
        MemoryStore {
            router: Arc::new(FakeRouter::new(places)),
            ..self
        }
    }

    /// The read side's router.
    pub fn router(&self) -> &Arc<FakeRouter> {
        &self.router
    }

    /// Makes every call on connections to `place` fail as a lost link.
    pub fn make_unreachable(&self, place: usize) {
        self.lock().unreachable.push(place);
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds a table and its rows (each value as the column would store it).
    pub fn add_table(&self, meta: TableMeta, rows: &[Vec<Option<&str>>]) -> Arc<TableMeta> {
        let meta = Arc::new(meta);
        let mut table = Table {
            meta: meta.clone(),
            rows: BTreeMap::new(),
            next_rowid: 1,
            next_id: 1,
        };
        for r in rows {
            let row: Vec<Value> = r.iter().map(|v| v.map(|s| s.as_bytes().to_vec())).collect();
            table.insert_row(row);
        }
        let key = (meta.db.clone(), meta.name.clone());
        self.lock().committed.insert(key, table);
        meta
    }

    /// Makes call number `n` (counted from 1 over every connection, see
    /// `calls`) answer `fault`.
    pub fn fail_at(&self, n: u64, fault: Fault) {
        self.lock().faults.push((n, fault));
    }

    /// Holds every later commit until the returned semaphore gives it a
    /// permit (one per commit).
    pub fn hold_commits(&self) -> Arc<tokio::sync::Semaphore> {
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        self.lock().commit_gate = Some(gate.clone());
        gate
    }

    /// Calls made so far.
    pub fn calls(&self) -> u64 {
        self.lock().calls
    }

    /// What each call was, in order (`scan`, `insert_rows`, `write_rows`,
    /// `commit`, ...).
    pub fn log(&self) -> Vec<String> {
        self.lock().log.clone()
    }

    /// A table's committed rows, in row order.
    pub fn rows(&self, db: &str, name: &str) -> Vec<Vec<Value>> {
        self.lock()
            .committed
            .get(&(db.to_string(), name.to_string()))
            .map(|t| t.rows.values().cloned().collect())
            .unwrap_or_default()
    }
}

impl Backend for MemoryStore {
    type Storage = MemoryConn;
    type Router = FakeRouter;

    async fn connect(&self) -> Result<MemoryConn, StorageError> {
        Ok(MemoryConn {
            store: self.clone(),
            group: Group::Off,
            begun: Tables::new(),
            place: 0,
        })
    }

    fn read_router(&self, side: ReadSide) -> Arc<FakeRouter> {
        match side {
            ReadSide::Reads => self.router.clone(),
            ReadSide::Writes => Arc::new(FakeRouter::new(1)),
        }
    }

    async fn connect_at(&self, _: &FakeRouter, place: usize) -> Result<MemoryConn, StorageError> {
        Ok(MemoryConn {
            store: self.clone(),
            group: Group::Off,
            begun: Tables::new(),
            place,
        })
    }

    fn describe_target(&self) -> String {
        "memory".into()
    }

    fn text_rules(&self) -> crate::TextRules {
        crate::TextRules::KeepsBytes
    }

    fn read_placement(&self) -> ReadPlacement {
        ReadPlacement {
            links: 2,
            long_reads: LongReads::Links(1),
        }
    }
}

/// Where a connection's write group is.
enum Group {
    Off,
    /// In a group: its own copy of the tables, committed whole.
    Open(Tables),
    /// Rolled back by a fault: every call fails with this until the group
    /// ends.
    Doomed(StorageError),
}

pub struct MemoryConn {
    store: MemoryStore,
    group: Group,
    /// The group's tables as they were at its start: its commit applies
    /// only what it changed since.
    begun: Tables,
    /// The place it reads from (`connect_at`); 0 is the primary.
    place: usize,
}

impl MemoryConn {
    /// Counts and records a call; the fault planned for it, if any.
    /// A call of a connection to a place other than the primary is logged
    /// with its place (`scan x2 @1`).
    fn call(&mut self, what: String) -> Result<(), StorageError> {
        let fault = {
            let mut s = self.store.lock();
            s.calls += 1;
            let n = s.calls;
            s.log.push(match self.place {
                0 => what,
                p => format!("{what} @{p}"),
            });
            let unreachable = s.unreachable.contains(&self.place);
            s.faults
                .iter()
                .find(|(at, _)| *at == n)
                .map(|(_, f)| *f)
                .or(unreachable.then_some(Fault::LostLink))
        };
        if let Group::Doomed(e) = &self.group {
            return Err(e.clone());
        }
        let Some(fault) = fault else {
            return Ok(());
        };
        let error = match fault {
            Fault::Busy => return Err(StorageError::Busy("memory: planned busy".into())),
            Fault::Deadlock => StorageError::Refused {
                code: ERR_LOCK_DEADLOCK,
                message: "memory: planned deadlock".into(),
            },
            Fault::LostLink => StorageError::Unavailable("memory: planned lost link".into()),
        };
        if matches!(self.group, Group::Open(_)) {
            self.group = Group::Doomed(error.clone());
        }
        Err(error)
    }

    /// Runs `f` on the tables this connection sees: its group's copy, or
    /// the committed ones (a write outside a group commits at once). A
    /// table without transactions is never copied: a group changes it at
    /// once, and a rollback leaves the change.
    fn with_tables<R>(&mut self, f: impl FnOnce(&mut Tables) -> R) -> R {
        match &mut self.group {
            Group::Open(tables) => {
                let mut state = self.store.lock();
                let shared: Vec<(String, String)> = state
                    .committed
                    .iter()
                    .filter(|(_, t)| !t.meta.transactional)
                    .map(|(k, _)| k.clone())
                    .collect();
                for k in &shared {
                    if let Some(t) = state.committed.remove(k) {
                        tables.insert(k.clone(), t);
                    }
                }
                let result = f(tables);
                for k in shared {
                    if let Some(t) = tables.remove(&k) {
                        state.committed.insert(k, t);
                    }
                }
                result
            }
            _ => f(&mut self.store.lock().committed),
        }
    }
}

impl StorageConn for MemoryConn {
    async fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        self.call(format!("describe {db}.{table}"))?;
        let meta = self.with_tables(|t| {
            t.get(&(db.to_string(), table.to_string()))
                .map(|t| (*t.meta).clone())
        });
        meta.ok_or_else(|| StorageError::OpenTable(format!("{db}.{table}")))
    }

    async fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.call(format!("scan x{}", scans.len()))?;
        let results: Vec<Vec<MemRow>> = self.with_tables(|tables| {
            scans
                .iter()
                .map(|s| {
                    let key = (s.index.table.db.clone(), s.index.table.name.clone());
                    tables.get(&key).map(|t| t.scan(s)).unwrap_or_default()
                })
                .collect()
        });
        for (i, rows) in results.iter().enumerate() {
            for row in rows {
                if visit(i, row) == ScanStep::Stop {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Every row as `scan_many` reads it: nothing reports a change of the
    /// embedded store before it is visible.
    async fn read_for_cache(
        &mut self,
        scans: &[Scan<'_>],
    ) -> Result<Vec<super::CacheRead>, StorageError> {
        let mut read: Vec<Vec<super::OwnedRow>> = vec![Vec::new(); scans.len()];
        let mut keep = |i: usize, row: &dyn RowView| {
            let n = scans[i].index.columns.len();
            read[i].push((0..n).map(|c| row.column(c).map(Box::from)).collect());
            ScanStep::Continue
        };
        self.scan_many(scans, &mut keep).await?;
        Ok(read.into_iter().map(Some).collect())
    }

    fn write_batching(&self) -> WriteBatching {
        self.store.batching
    }

    async fn insert_rows(
        &mut self,
        rows: &[RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>> {
        if let Err(e) = self.call(format!("insert_rows x{}", rows.len())) {
            return rows.iter().map(|_| Err(e.clone())).collect();
        }
        self.with_tables(|tables| {
            rows.iter()
                .map(|r| {
                    let key = (r.table.db.clone(), r.table.name.clone());
                    match tables.get_mut(&key) {
                        Some(t) => t.insert(r),
                        None => Err(StorageError::OpenTable(r.table.name.clone())),
                    }
                })
                .collect()
        })
    }

    async fn write_rows(&mut self, writes: &[RowWrite<'_>]) -> Vec<Result<u64, StorageError>> {
        if let Err(e) = self.call(format!("write_rows x{}", writes.len())) {
            return writes.iter().map(|_| Err(e.clone())).collect();
        }
        self.with_tables(|tables| {
            writes
                .iter()
                .map(|w| {
                    let key = (w.table.db.clone(), w.table.name.clone());
                    match tables.get_mut(&key) {
                        Some(t) => t.write(w),
                        None => Err(StorageError::OpenTable(w.table.name.clone())),
                    }
                })
                .collect()
        })
    }

    async fn begin(&mut self) -> Result<(), StorageError> {
        self.call("begin".into())?;
        let copy = self
            .store
            .lock()
            .committed
            .iter()
            .filter(|(_, t)| t.meta.transactional)
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect::<Tables>();
        self.begun = copy.clone();
        self.group = Group::Open(copy);
        Ok(())
    }

    async fn commit(&mut self) -> Committed {
        let called = self.call("commit".into());
        let gate = self.store.lock().commit_gate.clone();
        if let Some(gate) = gate {
            if let Ok(permit) = gate.acquire().await {
                permit.forget();
            }
        }
        match (std::mem::replace(&mut self.group, Group::Off), called) {
            (Group::Open(tables), Ok(())) => {
                let begun = std::mem::take(&mut self.begun);
                let mut state = self.store.lock();
                for (key, mine) in tables {
                    let before = begun.get(&key);
                    apply_changes(&mut state.committed, key.clone(), mine, before);
                }
                Committed::done()
            }
            (Group::Doomed(e), _) | (_, Err(e)) => Committed::failed(CommitFailure::all(e)),
            (Group::Off, Ok(())) => Committed::done(),
        }
    }

    async fn rollback(&mut self) {
        self.store.lock().log.push("rollback".into());
        self.group = Group::Off;
    }
}

/// Applies to the committed `key` table what a group changed in its copy
/// `mine` since `before` (rows added, changed, removed), leaving rows other
/// groups committed meanwhile as they are.
fn apply_changes(
    committed: &mut Tables,
    key: (String, String),
    mine: Table,
    before: Option<&Table>,
) {
    let Some(target) = committed.get_mut(&key) else {
        committed.insert(key, mine);
        return;
    };
    let empty = BTreeMap::new();
    let old = before.map_or(&empty, |t| &t.rows);
    for rowid in old.keys().filter(|r| !mine.rows.contains_key(r)) {
        target.rows.remove(rowid);
    }
    for (rowid, row) in &mine.rows {
        if old.get(rowid) != Some(row) {
            target.rows.insert(*rowid, row.clone());
        }
    }
    target.next_rowid = target.next_rowid.max(mine.next_rowid);
    target.next_id = target.next_id.max(mine.next_id);
}

/// A row as a scan hands it out.
struct MemRow {
    columns: Vec<Value>,
    verdict: FilterVerdict,
    /// The row number, then its position (key values and row number).
    locator: Vec<Value>,
}

impl RowView for MemRow {
    fn column(&self, i: usize) -> Option<&[u8]> {
        self.columns.get(i).and_then(|v| v.as_deref())
    }

    fn filter_state(&self) -> FilterVerdict {
        self.verdict
    }

    fn locator(&self) -> Vec<Value> {
        self.locator.clone()
    }

    fn exact(&self, _k: usize) -> Option<&[u8]> {
        None
    }
}

/// A value as a column of `kind` stores it.
fn stored(kind: &ColumnKind, v: Option<&[u8]>) -> Value {
    let v = v?;
    Some(match kind {
        ColumnKind::Integer { min, max } => stored_integer(v, *min, *max).to_string().into_bytes(),
        _ => v.to_vec(),
    })
}

/// Compares two stored values of a column of `kind`: NULL lowest.
fn compare(kind: &ColumnKind, a: Option<&[u8]>, b: Option<&[u8]>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(a), Some(b)) => match kind {
            ColumnKind::Integer { .. } => {
                let n = |v: &[u8]| stored_integer(v, i128::MIN, i128::MAX);
                n(a).cmp(&n(b))
            }
            _ => a.cmp(b),
        },
    }
}

const ROWID: ColumnKind = ColumnKind::Integer {
    min: 0,
    max: i64::MAX as i128,
};

impl Table {
    fn insert_row(&mut self, row: Vec<Value>) -> u64 {
        let rowid = self.next_rowid;
        self.next_rowid += 1;
        self.rows.insert(rowid, row);
        rowid
    }

    /// The kind and value of position part `p` of a row: the index's key
    /// columns, then the row number.
    fn part(&self, index: &IndexMeta, rowid: u64, p: usize) -> (&ColumnKind, Value) {
        let row = &self.rows[&rowid];
        match index.key_columns.get(p) {
            Some(Some(c)) => (&self.meta.columns[*c].kind, row[*c].clone()),
            _ => (&ROWID, Some(rowid.to_string().into_bytes())),
        }
    }

    /// Compares a row's first `given.len()` position parts with `given`.
    fn compare_position(&self, index: &IndexMeta, rowid: u64, given: &[Value]) -> Ordering {
        for (p, g) in given.iter().enumerate() {
            let (kind, v) = self.part(index, rowid, p);
            let g = stored(kind, g.as_deref());
            match compare(kind, v.as_deref(), g.as_deref()) {
                Ordering::Equal => continue,
                other => return other,
            }
        }
        Ordering::Equal
    }

    fn scan(&self, scan: &Scan<'_>) -> Vec<MemRow> {
        let index = scan.index.index_meta();
        let parts = index.key_columns.len() + 1;
        let mut order: Vec<u64> = self.rows.keys().copied().collect();
        order.sort_by(|&a, &b| {
            let whole: Vec<Value> = (0..parts).map(|p| self.part(index, b, p).1).collect();
            self.compare_position(index, a, &whole)
        });
        if scan.op.is_descending() {
            order.reverse();
        }
        let keys: Vec<Value> = scan
            .keys
            .iter()
            .take(index.key_columns.len())
            .map(|k| k.map(<[u8]>::to_vec))
            .collect();
        let mut out = Vec::new();
        for rowid in order {
            let by_key = self.compare_position(index, rowid, &keys);
            let in_range = match scan.op {
                FindOp::Eq => by_key == Ordering::Equal,
                FindOp::Ge => by_key != Ordering::Less,
                FindOp::Gt => by_key == Ordering::Greater,
                FindOp::Le => by_key != Ordering::Greater,
                FindOp::Lt => by_key == Ordering::Less,
            };
            if !in_range {
                continue;
            }
            if let Some(after) = scan.after {
                let beyond = if scan.op.is_descending() {
                    Ordering::Less
                } else {
                    Ordering::Greater
                };
                if self.compare_position(index, rowid, after) != beyond {
                    continue;
                }
            }
            let verdict = self.verdict(scan, rowid);
            let keep = match scan.filter_mode {
                FilterMode::None => true,
                FilterMode::InWhere => verdict == FilterVerdict::Pass,
                FilterMode::StateColumn { exclude_skipped } => {
                    !(exclude_skipped && verdict == FilterVerdict::Skip)
                }
            };
            if !keep {
                continue;
            }
            let row = &self.rows[&rowid];
            let mut locator = vec![Some(rowid.to_string().into_bytes())];
            if scan.with_locator {
                locator.extend((0..parts).map(|p| self.part(index, rowid, p).1));
            }
            out.push(MemRow {
                columns: scan.index.columns.iter().map(|&c| row[c].clone()).collect(),
                verdict: match scan.filter_mode {
                    FilterMode::StateColumn { .. } => verdict,
                    _ => FilterVerdict::Pass,
                },
                locator,
            });
            if out.len() as u64 >= scan.fetch {
                break;
            }
        }
        out
    }

    /// The first false filter decides (`scan_sql::state_expr`).
    fn verdict(&self, scan: &Scan<'_>, rowid: u64) -> FilterVerdict {
        let row = &self.rows[&rowid];
        for f in scan.filters {
            let kind = &self.meta.columns[f.column].kind;
            let value = stored(kind, f.value.as_deref());
            let o = compare(kind, row[f.column].as_deref(), value.as_deref());
            let holds = match f.op {
                FilterOp::Eq => o == Ordering::Equal,
                FilterOp::Ne => o != Ordering::Equal,
                FilterOp::Gt => o == Ordering::Greater,
                FilterOp::Ge => o != Ordering::Less,
                FilterOp::Lt => o == Ordering::Less,
                FilterOp::Le => o != Ordering::Greater,
                FilterOp::Never => false,
                FilterOp::Always => true,
            };
            if !holds {
                return match f.kind {
                    FilterKind::Skip => FilterVerdict::Skip,
                    FilterKind::While => FilterVerdict::Stop,
                };
            }
        }
        FilterVerdict::Pass
    }

    /// Whether `row` would repeat the key of a unique index held by a row
    /// other than `except`.
    fn duplicates(&self, row: &[Value], except: Option<u64>) -> bool {
        self.meta.indexes.iter().filter(|i| i.unique).any(|i| {
            let cols: Vec<usize> = i.key_columns.iter().flatten().copied().collect();
            if cols.iter().any(|&c| row[c].is_none()) {
                return false;
            }
            self.rows.iter().any(|(id, other)| {
                Some(*id) != except
                    && cols.iter().all(|&c| {
                        let kind = &self.meta.columns[c].kind;
                        compare(kind, other[c].as_deref(), row[c].as_deref()) == Ordering::Equal
                    })
            })
        })
    }

    fn insert(&mut self, r: &RowInsert<'_>) -> Result<Option<u64>, StorageError> {
        let meta = self.meta.clone();
        let mut row: Vec<Value> = meta
            .columns
            .iter()
            .map(|c| {
                (!c.nullable).then(|| match c.kind {
                    ColumnKind::Integer { .. } => b"0".to_vec(),
                    _ => Vec::new(),
                })
            })
            .collect();
        for (&c, v) in r.columns.iter().zip(r.values) {
            row[c] = stored(&meta.columns[c].kind, *v);
        }
        let mut id = None;
        if let Some(auto) = meta.columns.iter().position(|c| c.auto_increment) {
            if r.columns.contains(&auto) {
                let given = row[auto]
                    .as_deref()
                    .map_or(0, |v| stored_integer(v, 0, i128::from(i64::MAX)) as i64);
                self.next_id = self.next_id.max(given + 1);
                id = Some(given as u64);
            } else {
                row[auto] = Some(self.next_id.to_string().into_bytes());
                id = Some(self.next_id as u64);
                self.next_id += 1;
            }
        }
        if self.duplicates(&row, None) {
            return Err(duplicate());
        }
        self.insert_row(row);
        Ok(meta.has_autoincrement.then_some(id.unwrap_or(0)))
    }

    fn write(&mut self, w: &RowWrite<'_>) -> Result<u64, StorageError> {
        let found = match w.target {
            RowTarget::Locator(locator) => locator
                .first()
                .and_then(|l| l.as_deref())
                .and_then(|l| std::str::from_utf8(l).ok()?.parse::<u64>().ok())
                .filter(|id| self.rows.contains_key(id)),
            RowTarget::Key { index, keys } => {
                let meta = index.index_meta();
                let keys: Vec<Value> = keys.iter().map(|k| k.map(<[u8]>::to_vec)).collect();
                self.rows
                    .keys()
                    .copied()
                    .find(|&id| self.compare_position(meta, id, &keys) == Ordering::Equal)
            }
        };
        let Some(rowid) = found else {
            return Ok(0);
        };
        match w.change {
            Change::Delete => {
                self.rows.remove(&rowid);
            }
            Change::Update { columns, values } => {
                let meta = self.meta.clone();
                let mut row = self.rows[&rowid].clone();
                for (&c, v) in columns.iter().zip(values) {
                    let kind = &meta.columns[c].kind;
                    row[c] = match v {
                        WriteValue::Bytes(b) => stored(kind, *b),
                        WriteValue::Int(n) => stored(kind, Some(n.to_string().as_bytes())),
                    };
                }
                if self.duplicates(&row, Some(rowid)) {
                    return Err(duplicate());
                }
                self.rows.insert(rowid, row);
            }
        }
        Ok(1)
    }
}

fn duplicate() -> StorageError {
    StorageError::Refused {
        code: ERR_DUPLICATE_KEY,
        message: "memory: duplicate key".into(),
    }
}
