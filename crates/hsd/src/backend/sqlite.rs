//! The embedded store: one SQLite file per HandlerSocket db name,
//! `<data-dir>/<db>.sqlite`, in WAL mode so readers never wait for the writer
//! and other SQLite tools can use the same files while hsd runs.

use super::scan_sql::{self, Dialect, Param, ScanShape, ScanSql};
use super::write_sql;
use super::{
    Backend, ColumnMeta, CommitFailure, IndexMeta, RowView, RowVisitor, Scan, ScanStep,
    StorageConn, StorageError, TableMeta, ERR_DUPLICATE_KEY, ERR_NOT_NULL,
};
use hs_proto::Value;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{ffi, Connection, OpenFlags};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Bytes of each db file that reads use through mmap (a cap, not an allocation).
const MMAP_SIZE: i64 = 1 << 30;

const DIALECT: Dialect = Dialect { lock_suffix: "" };

/// How hard a commit is made durable (SQLite's `synchronous` pragma).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    Off,
    Normal,
    Full,
}

impl Synchronous {
    fn pragma(self) -> &'static str {
        match self {
            Synchronous::Off => "OFF",
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
}

pub struct SqliteBackend {
    data_dir: PathBuf,
    synchronous: Synchronous,
}

impl SqliteBackend {
    pub fn new(data_dir: impl Into<PathBuf>, synchronous: Synchronous) -> Self {
        SqliteBackend {
            data_dir: data_dir.into(),
            synchronous,
        }
    }
}

impl Backend for SqliteBackend {
    fn connect(&self) -> Result<Box<dyn StorageConn>, StorageError> {
        Ok(Box::new(SqliteConn {
            data_dir: self.data_dir.clone(),
            synchronous: self.synchronous,
            dbs: HashMap::new(),
            statements: HashMap::new(),
            in_write_group: false,
        }))
    }

    fn describe_target(&self) -> String {
        format!("sqlite:{}", self.data_dir.display())
    }

    fn reads_inline(&self) -> bool {
        true
    }
}

/// A db name is a file name: keep it to a safe alphabet.
pub fn valid_db_name(db: &str) -> bool {
    !db.is_empty()
        && db.len() <= 64
        && db
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$')
}

pub fn db_path(data_dir: &Path, db: &str) -> PathBuf {
    data_dir.join(format!("{db}.sqlite"))
}

/// Opens (or with `create`, creates) a db file with hsd's settings.
pub fn open_db(
    data_dir: &Path,
    db: &str,
    create: bool,
    synchronous: Synchronous,
) -> Result<Connection, StorageError> {
    if !valid_db_name(db) {
        return Err(StorageError::OpenTable(format!("invalid db name {db:?}")));
    }
    let path = db_path(data_dir, db);
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if create {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    } else if !path.exists() {
        return Err(StorageError::OpenTable(format!("no database {db}")));
    }
    let conn = Connection::open_with_flags(&path, flags)
        .map_err(|e| StorageError::OpenTable(format!("{}: {e}", path.display())))?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(refused)?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(refused)?;
    conn.pragma_update(None, "synchronous", synchronous.pragma())
        .map_err(refused)?;
    // Reads come through a memory map instead of a pread per page, and each
    // connection keeps a larger page cache: lookups then cost no syscall.
    conn.pragma_update(None, "mmap_size", MMAP_SIZE)
        .map_err(refused)?;
    conn.pragma_update(None, "cache_size", -16_384)
        .map_err(refused)?;
    conn.set_prepared_statement_cache_capacity(512);
    Ok(conn)
}

/// One db file's connection and where its part of a write group stands.
struct DbHandle {
    conn: Connection,
    group: DbGroup,
}

/// A db file's transaction within the current write group. Each file
/// commits on its own (SQLite cannot commit WAL files atomically together),
/// so each file's writes are answered by its own outcome.
enum DbGroup {
    /// Not written in this group (yet).
    Idle,
    /// `BEGIN IMMEDIATE` done; the group's writes to this file are pending.
    Open,
    /// The transaction is gone (SQLite rolled it back after an I/O error, a
    /// full disk, ...) or could not start: the file's writes in this group
    /// are lost or refused, and its later ones fail at once instead of
    /// running, and committing, on their own.
    Doomed(StorageError),
}

pub struct SqliteConn {
    data_dir: PathBuf,
    synchronous: Synchronous,
    dbs: HashMap<String, DbHandle>,
    statements: HashMap<ScanShape, Arc<ScanSql>>,
    /// Between `begin` and `commit`: statements join their file's transaction.
    in_write_group: bool,
}

/// Bound on cached statement texts; shapes are few in practice.
const MAX_CACHED_SHAPES: usize = 4096;

fn refused(e: rusqlite::Error) -> StorageError {
    match &e {
        rusqlite::Error::SqliteFailure(err, msg) => {
            let code = match err.extended_code {
                ffi::SQLITE_CONSTRAINT_PRIMARYKEY | ffi::SQLITE_CONSTRAINT_UNIQUE => {
                    ERR_DUPLICATE_KEY
                }
                ffi::SQLITE_CONSTRAINT_NOTNULL => ERR_NOT_NULL,
                other => other as u32,
            };
            StorageError::Refused {
                code,
                message: msg.clone().unwrap_or_else(|| err.to_string()),
            }
        }
        _ => StorageError::Refused {
            code: 1,
            message: e.to_string(),
        },
    }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

impl SqliteConn {
    /// The db file's connection; inside a write group, with its transaction
    /// begun.
    fn db(&mut self, db: &str) -> Result<&mut DbHandle, StorageError> {
        if !self.dbs.contains_key(db) {
            let conn = open_db(&self.data_dir, db, false, self.synchronous)?;
            self.dbs.insert(
                db.to_string(),
                DbHandle {
                    conn,
                    group: DbGroup::Idle,
                },
            );
        }
        let in_write_group = self.in_write_group;
        let handle = self
            .dbs
            .get_mut(db)
            .ok_or_else(|| StorageError::OpenTable(db.to_string()))?;
        if in_write_group {
            match &handle.group {
                DbGroup::Open => {}
                DbGroup::Doomed(e) => return Err(e.clone()),
                DbGroup::Idle => match handle.conn.execute_batch("BEGIN IMMEDIATE") {
                    Ok(()) => handle.group = DbGroup::Open,
                    Err(e) => {
                        let e = refused(e);
                        handle.group = DbGroup::Doomed(e.clone());
                        return Err(e);
                    }
                },
            }
        }
        Ok(handle)
    }

    /// Runs one write statement in its file's group transaction. When SQLite
    /// answers an error by rolling back the whole transaction (it does for
    /// a full disk or an I/O error), the file's group is doomed.
    fn write_statement(
        &mut self,
        db: &str,
        run: impl FnOnce(&Connection) -> Result<(), StorageError>,
    ) -> Result<(), StorageError> {
        let in_write_group = self.in_write_group;
        let handle = self.db(db)?;
        let result = run(&handle.conn);
        if let Err(e) = &result {
            if in_write_group && handle.conn.is_autocommit() {
                handle.group = DbGroup::Doomed(e.clone());
            }
        }
        result
    }
}

impl SqliteConn {
    fn run_scans(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        for (n, scan) in scans.iter().enumerate() {
            let shape = ScanShape::of(scan);
            let sql = match self.statements.get(&shape) {
                Some(s) => s.clone(),
                None => {
                    if self.statements.len() >= MAX_CACHED_SHAPES {
                        self.statements.clear();
                    }
                    let s = Arc::new(scan_sql::build(scan, DIALECT));
                    self.statements.insert(shape, s.clone());
                    s
                }
            };
            let handle = self.db(&scan.index.table.db)?;
            let mut stmt = handle.conn.prepare_cached(&sql.sql).map_err(refused)?;
            for (i, p) in sql.params.iter().enumerate() {
                let r = match *p {
                    Param::Key(k) => stmt.raw_bind_parameter(i + 1, text(scan.keys[k])),
                    Param::Filter(f) => {
                        stmt.raw_bind_parameter(i + 1, text(scan.filters[f].value.as_deref()))
                    }
                    Param::Limit => stmt
                        .raw_bind_parameter(i + 1, i64::try_from(scan.fetch).unwrap_or(i64::MAX)),
                };
                r.map_err(refused)?;
            }
            let mut rows = stmt.raw_query();
            while let Some(row) = rows.next().map_err(refused)? {
                let view = SqliteRow {
                    row,
                    ncols: scan.index.columns.len(),
                    has_state: sql.has_state,
                    locator_len: sql.locator_len,
                };
                if visit(n, &view) == ScanStep::Stop {
                    break;
                }
            }
        }
        Ok(())
    }
}

struct SqliteRow<'r, 's> {
    row: &'r rusqlite::Row<'s>,
    ncols: usize,
    has_state: bool,
    locator_len: usize,
}

impl RowView for SqliteRow<'_, '_> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        match self.row.get_ref(i) {
            Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => Some(t),
            // Columns are selected as TEXT; anything else is a NULL.
            _ => None,
        }
    }

    fn filter_state(&self) -> i64 {
        if !self.has_state {
            return 0;
        }
        match self.row.get_ref(self.ncols) {
            Ok(ValueRef::Integer(n)) => n,
            _ => 0,
        }
    }

    fn locator(&self) -> Vec<Value> {
        let start = self.ncols + usize::from(self.has_state);
        (start..start + self.locator_len)
            .map(|i| match self.row.get_ref(i) {
                Ok(ValueRef::Integer(n)) => Some(n.to_string().into_bytes()),
                Ok(ValueRef::Text(t)) | Ok(ValueRef::Blob(t)) => Some(t.to_vec()),
                Ok(ValueRef::Real(f)) => Some(f.to_string().into_bytes()),
                _ => None,
            })
            .collect()
    }
}

/// Binds bytes as TEXT without a UTF-8 check: values are binary-safe.
fn text(v: Option<&[u8]>) -> ToSqlOutput<'_> {
    ToSqlOutput::Borrowed(match v {
        Some(b) => ValueRef::Text(b),
        None => ValueRef::Null,
    })
}

impl StorageConn for SqliteConn {
    fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        let handle = self.db(db)?;
        describe_table(&handle.conn, db, table)
    }

    fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        // Several scans outside a write transaction share one read
        // transaction: one snapshot and one round of WAL locking per batch
        // instead of one per statement.
        let batch_db = match scans {
            [first, _, ..] if !self.in_write_group => Some(first.index.table.db.as_str()),
            _ => None,
        };
        if let Some(db) = batch_db {
            let handle = self.db(db)?;
            let mut begin = handle.conn.prepare_cached("BEGIN").map_err(refused)?;
            begin.raw_execute().map_err(refused)?;
        }
        let result = self.run_scans(scans, visit);
        if let Some(db) = batch_db {
            let handle = self.db(db)?;
            let end = handle
                .conn
                .prepare_cached("COMMIT")
                .and_then(|mut s| s.raw_execute());
            if result.is_ok() {
                end.map_err(refused)?;
            }
        }
        result
    }

    fn insert(
        &mut self,
        table: &TableMeta,
        columns: &[usize],
        values: &[Option<&[u8]>],
    ) -> Result<Option<u64>, StorageError> {
        let sql = if columns.is_empty() {
            format!("INSERT INTO {} DEFAULT VALUES", table.table_sql)
        } else {
            write_sql::insert(table, columns)
        };
        let mut id = None;
        self.write_statement(&table.db, |conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(refused)?;
            for (i, v) in values.iter().enumerate() {
                stmt.raw_bind_parameter(i + 1, text(*v)).map_err(refused)?;
            }
            stmt.raw_execute().map_err(refused)?;
            if table.has_autoincrement {
                id = Some(conn.last_insert_rowid() as u64);
            }
            Ok(())
        })?;
        Ok(id)
    }

    fn update(
        &mut self,
        table: &TableMeta,
        locator: &[Value],
        columns: &[usize],
        values: &[Option<&[u8]>],
    ) -> Result<(), StorageError> {
        let sql = write_sql::update(table, columns);
        self.write_statement(&table.db, |conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(refused)?;
            let params = values
                .iter()
                .copied()
                .chain(locator.iter().map(|l| l.as_deref()));
            for (i, v) in params.enumerate() {
                stmt.raw_bind_parameter(i + 1, text(v)).map_err(refused)?;
            }
            stmt.raw_execute().map_err(refused)?;
            Ok(())
        })
    }

    fn delete(&mut self, table: &TableMeta, locator: &[Value]) -> Result<(), StorageError> {
        let sql = write_sql::delete(table);
        self.write_statement(&table.db, |conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(refused)?;
            for (i, l) in locator.iter().enumerate() {
                stmt.raw_bind_parameter(i + 1, text(l.as_deref()))
                    .map_err(refused)?;
            }
            stmt.raw_execute().map_err(refused)?;
            Ok(())
        })
    }

    fn begin(&mut self) -> Result<(), StorageError> {
        // Each db file gets its BEGIN lazily, on first use in the group.
        self.in_write_group = true;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), CommitFailure> {
        self.in_write_group = false;
        let mut lost = Vec::new();
        let mut first_error = None;
        for (name, h) in self.dbs.iter_mut() {
            let outcome = match std::mem::replace(&mut h.group, DbGroup::Idle) {
                DbGroup::Idle => continue,
                DbGroup::Open => h.conn.execute_batch("COMMIT").map_err(refused),
                DbGroup::Doomed(e) => Err(e),
            };
            if let Err(e) = outcome {
                if !h.conn.is_autocommit() {
                    let _ = h.conn.execute_batch("ROLLBACK");
                }
                lost.push(name.clone());
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            None => Ok(()),
            Some(error) => Err(CommitFailure {
                error,
                dbs: Some(lost),
            }),
        }
    }

    fn rollback(&mut self) -> Result<(), StorageError> {
        self.in_write_group = false;
        for h in self.dbs.values_mut() {
            if !matches!(
                std::mem::replace(&mut h.group, DbGroup::Idle),
                DbGroup::Idle
            ) && !h.conn.is_autocommit()
            {
                let _ = h.conn.execute_batch("ROLLBACK");
            }
        }
        Ok(())
    }
}

/// SQLite's names for the rowid, in the order hsd tries them.
const ROWID_ALIASES: [&str; 3] = ["rowid", "_rowid_", "oid"];

/// Reads a table's columns and indexes from SQLite's catalog.
fn describe_table(conn: &Connection, db: &str, table: &str) -> Result<TableMeta, StorageError> {
    let not_found = || StorageError::OpenTable(format!("no table {db}.{table}"));
    let exists: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(refused)?
        > 0;
    if !exists || table.starts_with("sqlite_") {
        return Err(not_found());
    }
    let table_sql = quote(table);

    // (name, declared type, pk ordinal)
    let mut stmt = conn
        .prepare_cached("SELECT name, type, pk FROM pragma_table_info(?1) ORDER BY cid")
        .map_err(refused)?;
    let cols: Vec<(String, String, i64)> = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(refused)?
        .collect::<Result<_, _>>()
        .map_err(refused)?;
    let columns: Vec<ColumnMeta> = cols
        .iter()
        .map(|(name, ty, _)| ColumnMeta {
            name: name.clone(),
            name_sql: quote(name),
            select_sql: format!("CAST({} AS TEXT)", quote(name)),
            is_blob: ty.to_ascii_uppercase().contains("BLOB"),
        })
        .collect();

    let without_rowid: bool = conn
        .query_row(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(refused)?
        != 0;
    // The name that reaches the rowid: a user column called `rowid` shadows
    // that alias (and would make every row look alike), so take the first of
    // SQLite's three aliases no column uses. None when all three are taken.
    let rowid_name: Option<&str> = if without_rowid {
        None
    } else {
        ROWID_ALIASES
            .into_iter()
            .find(|alias| !cols.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(alias)))
    };
    let mut pk: Vec<(i64, String)> = cols
        .iter()
        .filter(|(_, _, p)| *p > 0)
        .map(|(n, _, p)| (*p, n.clone()))
        .collect();
    pk.sort();
    let pk_cols: Vec<String> = pk.into_iter().map(|(_, n)| quote(&n)).collect();
    let rowid_alias = !without_rowid
        && pk_cols.len() == 1
        && cols.iter().any(|(n, ty, p)| {
            *p > 0 && ty.eq_ignore_ascii_case("INTEGER") && quote(n) == pk_cols[0]
        });

    // Indexes in creation order: (name, unique, origin, partial).
    let mut stmt = conn
        .prepare_cached(
            "SELECT il.name, il.origin, il.partial FROM pragma_index_list(?1) AS il \
             LEFT JOIN sqlite_schema s ON s.type = 'index' AND s.name = il.name \
             ORDER BY s.rowid, il.seq DESC",
        )
        .map_err(refused)?;
    let index_list: Vec<(String, String, i64)> = stmt
        .query_map([table], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(refused)?
        .collect::<Result<_, _>>()
        .map_err(refused)?;

    // What orders equal keys of a secondary index: the rowid, or the primary
    // key of a WITHOUT ROWID table (a shadowed rowid leaves the index order).
    let tiebreak: Vec<String> = match rowid_name {
        Some(r) => vec![r.to_string()],
        None if without_rowid => pk_cols.clone(),
        None => Vec::new(),
    };
    let mut indexes = Vec::new();
    // PRIMARY: the rowid alias, the declared primary key, or the bare rowid.
    let pk_index_name = index_list
        .iter()
        .find(|(_, origin, _)| origin == "pk")
        .map(|(n, _, _)| n.clone());
    if rowid_alias || without_rowid {
        indexes.push(IndexMeta {
            name: "PRIMARY".into(),
            key_sql: pk_cols.clone(),
            tiebreak_sql: Vec::new(),
            from_sql: table_sql.clone(),
            unique: true,
        });
    } else if let (false, Some(pk_name)) = (pk_cols.is_empty(), &pk_index_name) {
        indexes.push(IndexMeta {
            name: "PRIMARY".into(),
            key_sql: pk_cols.clone(),
            tiebreak_sql: Vec::new(),
            from_sql: format!("{table_sql} INDEXED BY {}", quote(pk_name)),
            unique: true,
        });
    } else if let Some(r) = rowid_name {
        indexes.push(IndexMeta {
            name: "PRIMARY".into(),
            key_sql: vec![r.to_string()],
            tiebreak_sql: Vec::new(),
            from_sql: table_sql.clone(),
            unique: true,
        });
    }
    for (name, origin, partial) in &index_list {
        if origin == "pk" || *partial != 0 {
            continue;
        }
        let mut stmt = conn
            .prepare_cached("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")
            .map_err(refused)?;
        let key_cols: Vec<Option<String>> = stmt
            .query_map([name], |r| r.get(0))
            .map_err(refused)?
            .collect::<Result<_, _>>()
            .map_err(refused)?;
        // Expression indexes cannot be addressed by column; leave them out.
        let Some(key_sql) = key_cols
            .into_iter()
            .map(|c| c.map(|c| quote(&c)))
            .collect::<Option<Vec<_>>>()
        else {
            continue;
        };
        indexes.push(IndexMeta {
            name: name.clone(),
            key_sql,
            tiebreak_sql: tiebreak.clone(),
            from_sql: format!("{table_sql} INDEXED BY {}", quote(name)),
            // Not used by this backend, which runs every scan on its own.
            unique: false,
        });
    }
    // How an UPDATE/DELETE finds the row a scan chose: the rowid when it can
    // be named, else the declared primary key; with neither, modify answers
    // an error rather than guess.
    let locator_sql = match rowid_name {
        Some(r) => vec![r.to_string()],
        None => pk_cols,
    };
    Ok(TableMeta {
        db: db.to_string(),
        name: table.to_string(),
        columns,
        indexes,
        locator_sql,
        table_sql,
        has_autoincrement: rowid_alias,
    })
}
