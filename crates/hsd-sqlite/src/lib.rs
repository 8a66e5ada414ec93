//! The embedded store: one SQLite file per HandlerSocket db name,
//! `<data-dir>/<db>.sqlite`, in WAL mode so readers never wait for the writer
//! and other SQLite tools can use the same files while hsd runs.
//!
//! - `meta`: a table's columns and indexes from SQLite's catalog.
//! - `conn`: `SqliteConn`, one event loop's handles on the db files, and how
//!   a write group commits file by file.
//! - `scan`: running scans with statements held per opened index.
//! - `stmt`: a prepared statement owned outside rusqlite's cache (the hot path).
//! - `shm`: a lock-free look at the WAL-index header (for read leases).
//! - `wal_sync`: durable commits with the WAL synced beside the event loop.
//! - `statement_clock`: the time budget of each statement.

mod conn;
pub(crate) mod double_text;
mod meta;
mod scan;
mod shm;
mod statement_clock;
mod stmt;
mod wal_sync;

pub use conn::SqliteConn;

use hsd_storage::{
    Backend, LongReads, OnePlace, ReadPlacement, ReadSide, StorageError, ERR_DUPLICATE_KEY,
    ERR_NOT_NULL,
};
use rusqlite::{ffi, Connection, OpenFlags};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wal_sync::WalSyncer;

/// Bytes of each db file that reads use through mmap (a cap, not an
/// allocation), unless the server is told otherwise (`--sqlite-mmap-mib`).
pub const MMAP_SIZE: i64 = 1 << 30;

/// How long a reader waits for a lock SQLite rarely makes it wait for in WAL
/// mode (recovery, an outside tool's exclusive lock). Writers never wait:
/// a busy file's writes are retried by the group committer instead.
const READ_BUSY_TIMEOUT: Duration = Duration::from_secs(2);

/// Threads for the finds that may read many rows (see `ReadPlacement`):
/// each runs one client batch at a time on its own connection.
const LONG_READ_THREADS: usize = 2;

/// How hard a commit is made durable before it is answered (SQLite's
/// `synchronous` pragma; `--synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, clap::ValueEnum)]
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
    /// How long one statement may run (None: no limit).
    statement_timeout: Option<Duration>,
    /// With `Synchronous::Full`: makes commits durable beside the loops.
    syncer: Option<Arc<WalSyncer>>,
    /// Bytes of each db file the serving connections read through mmap.
    mmap_bytes: i64,
}

impl SqliteBackend {
    pub fn new(data_dir: impl Into<PathBuf>, synchronous: Synchronous) -> Self {
        let data_dir = data_dir.into();
        let syncer =
            (synchronous == Synchronous::Full).then(|| Arc::new(WalSyncer::new(&data_dir)));
        SqliteBackend {
            data_dir,
            synchronous,
            statement_timeout: None,
            syncer,
            mmap_bytes: MMAP_SIZE,
        }
    }

    /// How much of each db file reads take through a memory map. Mapped
    /// reads cost no system call: 2x the lookups at 64 x 16 on a file held
    /// in memory. With data far larger than memory they thrash: 260 against
    /// 18,000 lookups/s (docs/benchmarks.md, the I/O-bound point).
    pub fn with_mmap_bytes(mut self, bytes: i64) -> Self {
        self.mmap_bytes = bytes;
        self
    }

    /// Stops statements that run longer than `timeout` (None: never).
    pub fn with_statement_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.statement_timeout = timeout;
        self
    }
}

impl Backend for SqliteBackend {
    type Storage = SqliteConn;
    type Router = OnePlace;

    async fn connect(&self) -> Result<SqliteConn, StorageError> {
        Ok(SqliteConn::new(
            self.data_dir.clone(),
            self.synchronous,
            self.syncer.clone(),
            self.statement_timeout,
            self.mmap_bytes,
        ))
    }

    /// One file, one place to read it from.
    fn read_router(&self, _: ReadSide) -> Arc<OnePlace> {
        Arc::new(OnePlace)
    }

    fn describe_target(&self) -> String {
        format!("sqlite:{}", self.data_dir.display())
    }

    fn text_rules(&self) -> hsd_storage::TextRules {
        hsd_storage::TextRules::KeepsBytes
    }

    /// Lookups from every connection of a loop run together on one
    /// connection per loop; long scans on threads of their own.
    fn read_placement(&self) -> ReadPlacement {
        ReadPlacement {
            links: 1,
            long_reads: LongReads::Threads(LONG_READ_THREADS),
        }
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
    conn.busy_timeout(READ_BUSY_TIMEOUT).map_err(refused)?;
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
    conn.set_prepared_statement_cache_capacity(64);
    double_text::register(&conn).map_err(refused)?;
    Ok(conn)
}

/// Maps an SQLite error to what a client sees.
pub(crate) fn refused(e: rusqlite::Error) -> StorageError {
    match &e {
        rusqlite::Error::SqliteFailure(err, msg) => refused_code(
            err.extended_code,
            msg.clone().unwrap_or_else(|| err.to_string()),
        ),
        _ => StorageError::Refused {
            code: 1,
            message: e.to_string(),
        },
    }
}

/// Maps an extended SQLite result code and its message.
pub(crate) fn refused_code(extended_code: i32, message: String) -> StorageError {
    let code = match extended_code {
        ffi::SQLITE_CONSTRAINT_PRIMARYKEY | ffi::SQLITE_CONSTRAINT_UNIQUE => ERR_DUPLICATE_KEY,
        ffi::SQLITE_CONSTRAINT_NOTNULL => ERR_NOT_NULL,
        ffi::SQLITE_INTERRUPT => hsd_storage::ERR_STATEMENT_TIMEOUT,
        other if other & 0xff == ffi::SQLITE_BUSY => return StorageError::Busy(message),
        other => other as u32,
    };
    StorageError::Refused { code, message }
}

fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
