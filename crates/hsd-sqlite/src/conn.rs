//! `SqliteConn`: one event loop's handles on the db files, opened on first
//! use, its read leases, and a write group's transactions.
//!
//! Read leases: finds run in a read transaction that stays open between
//! batches while nothing commits. Beginning and ending a transaction takes
//! and drops SQLite's file locks (several system calls, a fifth of a lone
//! lookup's cost); a lease skips that. Before each batch the WAL-index
//! header is compared with the one seen when the lease began (`shm`): if
//! anything committed since, the lease ends and a new one begins, so every
//! find sees every commit that came before it. A connection left idle ends
//! its leases after `READ_LEASE_IDLE` (`release_idle`), so checkpoints and
//! other processes never wait on an idle hsd.
//!
//! A write group gives each db file its own transaction (SQLite cannot
//! commit WAL files atomically together), so every write is answered by its
//! own file's outcome. A writer never waits for a file's lock: when another
//! process holds it, the write fails with `Busy` before doing anything and
//! the group committer tries it again later, while other files go on.

use super::meta::describe_table;
use super::scan::{next_row, ScanStatements, SqliteRow, MAX_KEPT_SQL};
use super::shm::{Fingerprint, WalIndexView};
use super::statement_clock::StatementClock;
use super::stmt::RawStatement;
use super::wal_sync::WalSyncer;
use super::{db_path, open_db, refused, Synchronous, MMAP_SIZE};
use hs_proto::{FindOp, Value};
use hsd_storage::values::stored_integer;
use hsd_storage::write_sql::{self, WritePlaceholders};
use hsd_storage::ERR_DUPLICATE_KEY;
use hsd_storage::{
    Change, ColumnKind, CommitFailure, Committed, Durability, FilterMode, RowInsert, RowTarget,
    RowView, RowVisitor, RowWrite, Scan, ScanStep, StorageConn, StorageError, TableMeta,
    WriteBatching, WriteValue,
};
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A scan hands the thread back to the event loop after running this long,
/// so one long scan cannot hold up the loop's other connections.
const SCAN_SLICE: Duration = Duration::from_millis(2);
/// Rows between two looks at the clock.
const ROWS_PER_CLOCK_CHECK: u64 = 128;
/// An idle connection ends its read leases after this long.
const READ_LEASE_IDLE: Duration = Duration::from_millis(5);

/// One db file: its connection, its prepared scans, its part of a group.
struct DbFile {
    /// Declared before `conn`: statements are finalized before it closes.
    scans: ScanStatements,
    begin: RawStatement,
    commit: RawStatement,
    group: DbGroup,
    /// The committed state the open read lease sees (None: no lease).
    lease: Option<Fingerprint>,
    /// The WAL-index header, mapped on first use (None: not available).
    shm: Option<WalIndexView>,
    conn: Connection,
}

/// A db file's transaction within the current write group.
enum DbGroup {
    /// Not written in this group (yet).
    Idle,
    /// `BEGIN IMMEDIATE` done; the group's writes to this file are pending.
    Open,
    /// The transaction is gone (SQLite rolled it back after an I/O error, a
    /// full disk, ...): the file's writes in this group are lost, and its
    /// later ones fail at once instead of running, and committing, alone.
    Doomed(StorageError),
}

pub struct SqliteConn {
    data_dir: PathBuf,
    synchronous: Synchronous,
    /// Bytes of each db file read through mmap (`--sqlite-mmap-mib`).
    mmap_bytes: i64,
    /// Set when commits are made durable by syncing the WAL beside the loop.
    syncer: Option<Arc<WalSyncer>>,
    files: HashMap<String, DbFile>,
    /// Between `begin` and `commit`: statements join their file's transaction.
    in_write_group: bool,
    /// Reused for write statements' text.
    sql: Vec<u8>,
    /// When a find last ran (read leases end after idling).
    last_read: Instant,
    /// Stops a scan or write statement that runs past its time budget.
    clock: StatementClock,
}

impl SqliteConn {
    pub fn new(
        data_dir: PathBuf,
        synchronous: Synchronous,
        syncer: Option<Arc<WalSyncer>>,
        statement_timeout: Option<Duration>,
        mmap_bytes: i64,
    ) -> SqliteConn {
        SqliteConn {
            data_dir,
            synchronous,
            syncer,
            mmap_bytes,
            files: HashMap::new(),
            in_write_group: false,
            sql: Vec::with_capacity(256),
            last_read: Instant::now(),
            clock: StatementClock::new(statement_timeout),
        }
    }

    /// The db file's handle, opened on first use.
    fn file(&mut self, db: &str) -> Result<&mut DbFile, StorageError> {
        if !self.files.contains_key(db) {
            // With a syncer, SQLite appends the WAL without syncing it and
            // never checkpoints inside a commit: `wal_sync` does both.
            let sync = match self.syncer {
                Some(_) => Synchronous::Normal,
                None => self.synchronous,
            };
            let conn = open_db(&self.data_dir, db, false, sync)?;
            if self.mmap_bytes != MMAP_SIZE {
                conn.pragma_update(None, "mmap_size", self.mmap_bytes)
                    .map_err(refused)?;
            }
            if self.syncer.is_some() {
                conn.pragma_update(None, "wal_autocheckpoint", 0)
                    .map_err(refused)?;
            }
            self.clock.watch(&conn);
            let file = DbFile {
                scans: ScanStatements::default(),
                begin: RawStatement::prepare(&conn, "BEGIN")?,
                commit: RawStatement::prepare(&conn, "COMMIT")?,
                group: DbGroup::Idle,
                lease: None,
                shm: None,
                conn,
            };
            self.files.insert(db.to_string(), file);
        }
        self.files
            .get_mut(db)
            .ok_or_else(|| StorageError::OpenTable(db.to_string()))
    }

    /// Makes `db`'s read lease current: kept while nothing committed since
    /// it began, else ended and begun anew (the transaction itself starts
    /// with the next statement).
    fn lease(&mut self, db: &str) -> Result<(), StorageError> {
        let data_dir = self.data_dir.clone();
        let file = self.file(db)?;
        if file.shm.is_none() {
            file.shm = WalIndexView::open(&db_path(&data_dir, db));
        }
        let now = file.shm.as_ref().and_then(WalIndexView::fingerprint);
        if let (Some(seen), Some(now)) = (&file.lease, &now) {
            if seen == now {
                return Ok(());
            }
        }
        file.end_lease();
        if let Some(now) = now {
            file.begin.step()?;
            file.begin.reset();
            file.lease = Some(now);
        }
        Ok(())
    }

    fn end_leases(&mut self) {
        for f in self.files.values_mut() {
            f.end_lease();
        }
    }

    /// The db file's handle; inside a write group with its transaction begun.
    fn file_for_group(&mut self, db: &str) -> Result<&mut DbFile, StorageError> {
        let in_write_group = self.in_write_group;
        let syncer = self.syncer.clone();
        let file = self.file(db)?;
        if in_write_group {
            match &file.group {
                DbGroup::Open => {}
                DbGroup::Doomed(e) => return Err(e.clone()),
                DbGroup::Idle => {
                    if syncer.as_ref().is_some_and(|s| s.restart_due(db)) {
                        // Rewind the WAL now that it is checkpointed (see
                        // wal_sync); busy readers just make it wait a turn.
                        let _ = file.conn.busy_timeout(Duration::ZERO);
                        let _ = file
                            .conn
                            .query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
                    }
                    // Never wait for another writer here: the committer
                    // retries a busy file later.
                    let _ = file.conn.busy_timeout(Duration::ZERO);
                    let begun = file.conn.execute_batch("BEGIN IMMEDIATE").map_err(refused);
                    let _ = file.conn.busy_timeout(super::READ_BUSY_TIMEOUT);
                    match begun {
                        Ok(()) => file.group = DbGroup::Open,
                        Err(e @ StorageError::Busy(_)) => return Err(e),
                        Err(e) => {
                            file.group = DbGroup::Doomed(e.clone());
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(file)
    }

    /// Runs one write statement (text in `self.sql`) in its file's group
    /// transaction. When SQLite answers an error by rolling back the whole
    /// transaction (it does for a full disk or an I/O error), the file's
    /// group is doomed.
    fn write_statement(
        &mut self,
        db: &str,
        bind: impl FnOnce(&mut rusqlite::Statement<'_>) -> Result<(), StorageError>,
    ) -> Result<u64, StorageError> {
        let in_write_group = self.in_write_group;
        let sql = std::mem::take(&mut self.sql);
        let clock = self.clock.clone();
        let result = (|| {
            let file = self.file_for_group(db)?;
            let text = std::str::from_utf8(&sql).map_err(|_| StorageError::Refused {
                code: 1,
                message: "statement text is not UTF-8".into(),
            })?;
            let result: Result<u64, StorageError> = (|| {
                // rusqlite's cache keeps 64 statements: only small ones, so
                // that what it holds stays bounded in bytes too.
                let run = |stmt: &mut rusqlite::Statement<'_>| {
                    bind(stmt)?;
                    let _armed = clock.start();
                    stmt.raw_execute().map_err(refused)
                };
                if text.len() > MAX_KEPT_SQL {
                    run(&mut file.conn.prepare(text).map_err(refused)?)?;
                } else {
                    let mut cached = file.conn.prepare_cached(text).map_err(refused)?;
                    run(&mut cached)?;
                }
                Ok(file.conn.last_insert_rowid() as u64)
            })();
            if let Err(e) = &result {
                if in_write_group && file.conn.is_autocommit() {
                    file.group = DbGroup::Doomed(e.clone());
                }
            }
            result
        })();
        self.sql = sql;
        result
    }

    /// Raises an AUTOINCREMENT table's counter to its largest id.
    fn raise_sequence(&mut self, table: &TableMeta) {
        let Ok(file) = self.file(&table.db) else {
            return;
        };
        let sql = format!(
            "UPDATE sqlite_sequence SET seq = max(seq, (SELECT ifnull(max(rowid), 0) FROM {t})) \
             WHERE name = ?1",
            t = table.table_sql
        );
        let _ = file.conn.execute(&sql, [table.name.as_str()]);
    }

    /// Advances an AUTOINCREMENT table's counter past the id an insert
    /// would have taken (best effort: a table without AUTOINCREMENT has no
    /// counter to advance).
    fn consume_next_id(&mut self, table: &TableMeta) {
        let Ok(file) = self.file(&table.db) else {
            return;
        };
        let name = table.name.as_str();
        let sql = format!(
            "UPDATE sqlite_sequence SET seq = max(seq, (SELECT ifnull(max(rowid), 0) FROM {t})) + 1 \
             WHERE name = ?1",
            t = table.table_sql
        );
        if let Ok(0) = file.conn.execute(&sql, [name]) {
            let autoincrement: bool = file
                .conn
                .query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1 \
                     AND upper(sql) LIKE '%AUTOINCREMENT%'",
                    [name],
                    |r| r.get::<_, i64>(0),
                )
                .map(|n| n > 0)
                .unwrap_or(false);
            if autoincrement {
                let sql = format!(
                    "INSERT INTO sqlite_sequence (name, seq) \
                     SELECT ?1, ifnull(max(rowid), 0) + 1 FROM {t}",
                    t = table.table_sql
                );
                let _ = file.conn.execute(&sql, [name]);
            }
        }
    }

    async fn run_scans(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        let mut slice_start = Instant::now();
        let mut rows = 0u64;
        let clock = self.clock.clone();
        let armed = clock.start();
        for (n, scan) in scans.iter().enumerate() {
            let file = self.file_for_group(&scan.index.table.db)?;
            let st = file.scans.get(&file.conn, scan)?;
            st.bind(scan)?;
            let ncols = scan.index.columns.len();
            let result = loop {
                match next_row(&mut st.stmt) {
                    Ok(true) => {}
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                }
                let row = SqliteRow {
                    stmt: &st.stmt,
                    ncols,
                    layout: st.layout,
                };
                if visit(n, &row) == ScanStep::Stop {
                    break Ok(());
                }
                rows += 1;
                if rows.is_multiple_of(ROWS_PER_CLOCK_CHECK) && slice_start.elapsed() >= SCAN_SLICE
                {
                    // Let the loop's other connections run; this connection
                    // is ours alone (checked out), so the open statement
                    // waits safely.
                    let waiting = Instant::now();
                    tokio::task::yield_now().await;
                    armed.excuse(waiting.elapsed());
                    slice_start = Instant::now();
                }
            };
            st.stmt.reset();
            file.scans.release_passing();
            result?;
        }
        Ok(())
    }
}

impl DbFile {
    /// Ends the read lease's transaction, if any.
    fn end_lease(&mut self) {
        if self.lease.take().is_some() {
            let end = self.commit.step();
            self.commit.reset();
            if end.is_err() && !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
        }
    }
}

/// Binds bytes as TEXT without a UTF-8 check: values are binary-safe.
fn text(v: Option<&[u8]>) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match v {
        Some(b) => ValueRef::Text(b),
        None => ValueRef::Null,
    })
}

/// A value written into a column: an INTEGER column gets the integer the
/// original's integer column would have stored (`'5abc'` is 5, `''` 0);
/// other columns the bytes as TEXT.
fn stored<'a>(kind: &ColumnKind, v: WriteValue<'a>) -> ToSqlOutput<'a> {
    match (kind, v) {
        (_, WriteValue::Int(n)) => ToSqlOutput::Borrowed(ValueRef::Integer(n)),
        (ColumnKind::Integer { min, max }, WriteValue::Bytes(Some(b))) => {
            ToSqlOutput::Borrowed(ValueRef::Integer(stored_integer(b, *min, *max) as i64))
        }
        (_, WriteValue::Bytes(b)) => text(b),
    }
}

impl SqliteConn {
    /// One change. A row named by its whole key (never planned for this
    /// store, which takes writes one at a time) is found by the same scan a
    /// lookup runs, then changed by its locator.
    async fn write_row(&mut self, w: &RowWrite<'_>) -> Result<u64, StorageError> {
        let locator: Vec<Value> = match w.target {
            RowTarget::Locator(l) => l.to_vec(),
            RowTarget::Key { index, keys } => {
                let scan = Scan {
                    index,
                    op: FindOp::Eq,
                    keys: keys.to_vec(),
                    filters: &[],
                    filter_mode: FilterMode::None,
                    fetch: 1,
                    with_locator: true,
                    after: None,
                };
                let n = w.table.locator_sql.len();
                let mut found: Option<Vec<Value>> = None;
                let mut visit = |_: usize, row: &dyn RowView| {
                    let mut l = row.locator();
                    l.truncate(n);
                    found = Some(l);
                    ScanStep::Stop
                };
                self.run_scans(std::slice::from_ref(&scan), &mut visit)
                    .await?;
                match found {
                    Some(l) => l,
                    None => return Ok(0),
                }
            }
        };
        match w.change {
            Change::Update { columns, values } => {
                self.update_row(w.table, &locator, columns, values)?
            }
            Change::Delete => self.delete_row(w.table, &locator)?,
        }
        Ok(1)
    }

    fn insert_row(
        &mut self,
        table: &TableMeta,
        columns: &[usize],
        values: &[Option<&[u8]>],
    ) -> Result<Option<u64>, StorageError> {
        self.sql.clear();
        if columns.is_empty() {
            self.sql.extend_from_slice(b"INSERT INTO ");
            self.sql.extend_from_slice(table.table_sql.as_bytes());
            self.sql.extend_from_slice(b" DEFAULT VALUES");
        } else {
            write_sql::insert(table, columns, &mut WritePlaceholders, &mut self.sql);
        }
        let result = self.write_statement(&table.db, |stmt| {
            for (i, (v, &c)) in values.iter().zip(columns).enumerate() {
                stmt.raw_bind_parameter(
                    i + 1,
                    stored(&table.columns[c].kind, WriteValue::Bytes(*v)),
                )
                .map_err(refused)?;
            }
            Ok(())
        });
        let generated =
            table.has_autoincrement && !columns.iter().any(|&c| table.columns[c].auto_increment);
        match result {
            Ok(id) => Ok(table.has_autoincrement.then_some(id)),
            Err(e @ StorageError::Refused { code, .. })
                if code == ERR_DUPLICATE_KEY && generated =>
            {
                // InnoDB takes the next id before it finds the duplicate,
                // so the original's next insert gets the one after.
                self.consume_next_id(table);
                Err(e)
            }
            Err(e) => Err(e),
        }
    }

    fn update_row(
        &mut self,
        table: &TableMeta,
        locator: &[Value],
        columns: &[usize],
        values: &[WriteValue<'_>],
    ) -> Result<(), StorageError> {
        if columns.is_empty() {
            return Ok(());
        }
        self.sql.clear();
        write_sql::update(table, columns, &mut WritePlaceholders, &mut self.sql);
        self.write_statement(&table.db, |stmt| {
            for (i, (v, &c)) in values.iter().zip(columns).enumerate() {
                stmt.raw_bind_parameter(i + 1, stored(&table.columns[c].kind, *v))
                    .map_err(refused)?;
            }
            for (i, l) in locator.iter().enumerate() {
                stmt.raw_bind_parameter(values.len() + i + 1, text(l.as_deref()))
                    .map_err(refused)?;
            }
            Ok(())
        })
        .inspect(|_| {
            if columns.iter().any(|&c| table.columns[c].auto_increment) {
                // InnoDB's counter follows an id updated past it; so must
                // the AUTOINCREMENT table's.
                self.raise_sequence(table);
            }
        })
        .map(|_| ())
    }

    fn delete_row(&mut self, table: &TableMeta, locator: &[Value]) -> Result<(), StorageError> {
        self.sql.clear();
        write_sql::delete(table, &mut WritePlaceholders, &mut self.sql);
        self.write_statement(&table.db, |stmt| {
            for (i, l) in locator.iter().enumerate() {
                stmt.raw_bind_parameter(i + 1, text(l.as_deref()))
                    .map_err(refused)?;
            }
            Ok(())
        })
        .map(|_| ())
    }
}

impl StorageConn for SqliteConn {
    async fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        // Read the catalog as it is now, not as a lease saw it.
        self.end_leases();
        let file = self.file(db)?;
        // The table may have changed: statements prepared for it go.
        file.scans.clear();
        describe_table(&file.conn, db, table)
    }

    async fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        if !self.in_write_group {
            // Outside a write group, finds read through leases (see the
            // module comment): usually one look at shared memory per batch.
            self.last_read = Instant::now();
            let mut leased: Option<&str> = None;
            for scan in scans {
                let db = scan.index.table.db.as_str();
                if leased != Some(db) {
                    self.lease(db)?;
                    leased = Some(db);
                }
            }
        }
        let result = self.run_scans(scans, visit).await;
        if result.is_err() {
            // A failed statement may have ended the transaction.
            for f in self.files.values_mut() {
                if f.lease.is_some() && f.conn.is_autocommit() {
                    f.lease = None;
                }
            }
        }
        result
    }

    /// Each statement is a call into SQLite: nothing to gain by batching.
    fn write_batching(&self) -> WriteBatching {
        WriteBatching::OneAtATime
    }

    async fn insert_rows(
        &mut self,
        rows: &[RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>> {
        rows.iter()
            .map(|r| self.insert_row(r.table, r.columns, r.values))
            .collect()
    }

    async fn write_rows(&mut self, writes: &[RowWrite<'_>]) -> Vec<Result<u64, StorageError>> {
        let mut results = Vec::with_capacity(writes.len());
        for w in writes {
            results.push(self.write_row(w).await);
        }
        results
    }

    async fn begin(&mut self) -> Result<(), StorageError> {
        // Each db file gets its BEGIN lazily, on first use in the group.
        self.end_leases();
        self.in_write_group = true;
        Ok(())
    }

    async fn commit(&mut self) -> Committed {
        self.in_write_group = false;
        let mut lost = Vec::new();
        let mut first_error = None;
        let mut tickets = Vec::new();
        for (name, f) in self.files.iter_mut() {
            let outcome = match std::mem::replace(&mut f.group, DbGroup::Idle) {
                DbGroup::Idle => continue,
                DbGroup::Open => {
                    let r = f.commit.step().map(|_| ());
                    f.commit.reset();
                    r
                }
                DbGroup::Doomed(e) => Err(e),
            };
            match outcome {
                Ok(()) => {
                    if let Some(syncer) = &self.syncer {
                        tickets.push(syncer.committed(name));
                    }
                }
                Err(e) => {
                    if !f.conn.is_autocommit() {
                        let _ = f.conn.execute_batch("ROLLBACK");
                    }
                    lost.push(name.clone());
                    first_error.get_or_insert(e);
                }
            }
        }
        let durability = match (&self.syncer, tickets.is_empty()) {
            (Some(syncer), false) => Durability::Sync(syncer.step(tickets)),
            _ => Durability::Done,
        };
        Committed {
            failure: first_error.map(|error| CommitFailure {
                error,
                dbs: Some(lost),
            }),
            durability,
        }
    }

    fn idle_deadline(&self) -> Option<Instant> {
        self.files
            .values()
            .any(|f| f.lease.is_some())
            .then(|| self.last_read + READ_LEASE_IDLE)
    }

    async fn release_idle(&mut self) {
        self.end_leases();
    }

    async fn rollback(&mut self) {
        self.in_write_group = false;
        for f in self.files.values_mut() {
            if !matches!(
                std::mem::replace(&mut f.group, DbGroup::Idle),
                DbGroup::Idle
            ) && !f.conn.is_autocommit()
            {
                let _ = f.conn.execute_batch("ROLLBACK");
            }
        }
    }
}
