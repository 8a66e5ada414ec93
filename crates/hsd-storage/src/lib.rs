//! The narrow interface between HandlerSocket semantics and a database.
//!
//! The executor (`crate::exec`) owns what a request means; a backend only knows
//! how to describe a table, fetch rows in index order and write rows. Every
//! comparison (keys, filters, collations, NULL order) is expressed in SQL and
//! done by the database, never in Rust. Backends know nothing about sockets.

pub mod finding;
pub mod floats;
#[cfg(any(test, feature = "testing"))]
pub mod memory;
pub mod row_cache;
pub mod scan_sql;
pub mod values;
pub mod write_sql;

use hs_proto::{FilterKind, FilterOp, FindOp, Value};
use std::sync::Arc;
pub use values::IntRead;

/// What a backend could not do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StorageError {
    /// The db or table does not exist or may not be opened.
    #[error("cannot open table: {0}")]
    OpenTable(String),
    /// The database refused a statement; `code` is what the client sees in `1 1 <code>`.
    #[error("storage error {code}: {message}")]
    Refused { code: u32, message: String },
    /// The database is unreachable or the connection broke; retryable later.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// A modify was asked of a table without a primary or unique key.
    #[error("table {0} has no primary or unique key to modify rows by")]
    NoRowLocator(String),
    /// Another writer holds the db's lock; nothing was done, so the write
    /// may be run again later.
    #[error("busy: {0}")]
    Busy(String),
}

/// Error number for a duplicate key, as MySQL-era clients saw it (HA_ERR_FOUND_DUPP_KEY).
pub const ERR_DUPLICATE_KEY: u32 = 121;
/// Error number for a NULL written to a NOT NULL column (MySQL's ER_BAD_NULL_ERROR).
pub const ERR_NOT_NULL: u32 = 1048;
/// Error number for a modify on a table with no primary or unique NOT NULL
/// key to find its rows by (MySQL's ER_REQUIRES_PRIMARY_KEY).
pub(crate) const ERR_NO_ROW_KEY: u32 = 1173;
/// Error number when the storage is unreachable or timed out.
pub const ERR_UNAVAILABLE: u32 = 2013;
/// What a statement (or a modify walk) stopped by its time or row budget
/// answers: MariaDB's ER_STATEMENT_TIMEOUT, as its max_statement_time does.
pub const ERR_STATEMENT_TIMEOUT: u32 = 1969;
/// Error number for writes whose group's COMMIT was sent but whose outcome
/// could not be learned: neither its answer came nor could the server be
/// asked in time (MySQL's ER_ERROR_DURING_COMMIT). They may or may not be
/// applied.
pub const ERR_COMMIT_IN_DOUBT: u32 = 1180;
/// Error number when a db file stayed locked by another writer (SQLITE_BUSY).
pub const ERR_BUSY: u32 = 5;
/// Error numbers of a lock wait that timed out and of a deadlock, as the
/// original answered them (the storage engine's HA_ERR_LOCK_WAIT_TIMEOUT and
/// HA_ERR_LOCK_DEADLOCK).
pub const ERR_LOCK_WAIT_TIMEOUT: u32 = 146;
pub const ERR_LOCK_DEADLOCK: u32 = 149;

impl StorageError {
    /// The number a client sees in `1 1 <number>`.
    pub fn client_code(&self) -> u32 {
        match self {
            StorageError::Refused { code, .. } => *code,
            StorageError::Unavailable(_) => ERR_UNAVAILABLE,
            StorageError::NoRowLocator(_) => ERR_NO_ROW_KEY,
            StorageError::OpenTable(_) => 1,
            StorageError::Busy(_) => ERR_BUSY,
        }
    }

    /// A deadlock with another transaction, which the database broke by
    /// rolling this one back: the same writes may well succeed when run
    /// again. (A lock wait timeout is not one: the wait already lasted the
    /// whole timeout, for a lock someone else holds.)
    pub fn is_deadlock(&self) -> bool {
        matches!(self, StorageError::Refused { code, .. } if *code == ERR_LOCK_DEADLOCK)
    }

    /// The storage could not be reached (the client sees `1 1 2013`): the
    /// same reads may well succeed elsewhere.
    pub fn is_unreachable(&self) -> bool {
        self.client_code() == ERR_UNAVAILABLE
    }
}

/// A table's columns and indexes, with the SQL fragments the backend needs to
/// address them. Built once per table by `StorageConn::describe` and shared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableMeta {
    pub db: String,
    pub name: String,
    pub columns: Vec<ColumnMeta>,
    /// PRIMARY first (when there is one), then the other indexes in a stable order.
    pub indexes: Vec<IndexMeta>,
    /// SQL expressions that identify one row for UPDATE/DELETE (rowid, or the
    /// primary or a unique NOT NULL key); empty when the table has none.
    pub locator_sql: Vec<String>,
    /// The table's name as SQL, e.g. `"user"` or `` `test`.`user` ``.
    pub table_sql: String,
    /// Whether inserts answer with the new auto-increment id.
    pub has_autoincrement: bool,
    /// Whether the table's writes are part of the group's transaction.
    /// A table of an engine without transactions (MyISAM, Aria, MEMORY)
    /// keeps each statement's changes at once, whatever the group's fate:
    /// its writes run alone, one statement each, a read-modify-write of it
    /// is serialized among hsd's write loops (`StorageConn::serialize_modifies`),
    /// and their answers stand when the group is rolled back or run again.
    pub transactional: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnMeta {
    pub name: String,
    /// The column quoted as an identifier.
    pub name_sql: String,
    /// The expression that selects the column as the database's own text.
    pub select_sql: String,
    /// BLOB/TEXT-like columns cannot be filtered on (`filterblob`).
    pub is_blob: bool,
    /// What kind of values the column holds, as far as building SQL needs.
    pub kind: ColumnKind,
    pub nullable: bool,
    pub auto_increment: bool,
    /// An insert that does not give this column stores the empty string
    /// into it (its type's zero value), as the original did for columns
    /// whose default is NULL or an expression (it started from the
    /// table's default row with every NULL flag cleared). Otherwise the
    /// column's own default applies.
    pub zero_on_insert: bool,
    /// What `+`/`-` read the column's value as.
    pub int_read: IntRead,
    /// How a written value goes into the column.
    pub write_form: WriteForm,
    /// How the column's value is read and written back when it names a
    /// row (a locator) or a place in an index (a walk's position).
    pub locate: LocateForm,
}

/// How a row's locator or position value of a column is read, and written
/// back into the statement that finds the row again, so that it names the
/// stored value exactly: a FLOAT's text (`1.1`) is not its value, and a
/// BIT's is raw bytes that compare as a string.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum LocateForm {
    /// The column's own text, written back as bytes: the column stores
    /// exactly what the text says (integers, strings, dates, ENUM, SET).
    #[default]
    Text,
    /// A number, read by `read_sql` (`None`: the column itself) and written
    /// back as a numeric literal; an `approximate` one (FLOAT, DOUBLE) as a
    /// floating-point literal, which compares as a double.
    Number {
        read_sql: Option<String>,
        approximate: bool,
    },
}

/// How a written value goes into a column, where the plain way (the
/// value's bytes) does not fit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WriteForm {
    /// The value's bytes.
    #[default]
    Plain,
    /// Text for MySQL's JSON type, which refuses binary strings: stored
    /// when it is valid JSON, refused (3140) otherwise.
    Json,
    /// A generated column: the server computes it, nothing is written
    /// (MySQL refuses a value, MariaDB ignores one).
    Generated,
    /// An integer column behind vtgate: the integer the column stores
    /// (`values::stored_integer`) as a number. vtgate picks a row's shard
    /// from the literal it is given for the vindex column, and its `hash`
    /// vindex reads integers only (`'-5'`, `'1.5'` or `'1e2'` name no
    /// shard: 1105), where one server converts the text as it stores it.
    Integer,
}

impl ColumnMeta {
    /// The column's text rounds the value it stores (a FLOAT's six
    /// digits), so a row read to be changed also carries the exact value
    /// (`RowView::exact`): `+`/`-` add to what is stored, as the original
    /// did, not to what the text stands for.
    pub fn text_rounds(&self) -> bool {
        self.int_read == IntRead::Float
    }

    /// The integer the column reads back after `+`/`-` stored `n` into it
    /// (what a second opening of the column in one request starts from).
    pub fn stored_readback(&self, n: i64) -> i64 {
        match self.int_read {
            IntRead::Bit(bits) => values::bit_readback(bits, n),
            _ => values::stored_readback(&self.kind, n),
        }
    }
}

/// A column's type family: enough to write a literal the database compares
/// in the column's own terms, and to tell whether a key is written exactly
/// as the database would store it (only such keys can be grouped, see
/// `mysql::scan`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ColumnKind {
    /// An integer type with its range.
    Integer { min: i128, max: i128 },
    /// Character data in a character set (`utf8mb4`, `latin1`, ...) with a
    /// length limit in characters.
    Text { charset: String, max_chars: u64 },
    /// Bytes (BINARY, VARBINARY, BLOB): `fixed` pads to `max_len`.
    Bytes { max_len: u64, fixed: bool },
    /// DATE, DATETIME, TIMESTAMP, TIME: `cast` is the SQL type a value is
    /// CAST to, `zero` the type's zero value (what an unreadable value
    /// stores as); a TIMESTAMP also stores values outside its range as zero.
    Temporal {
        cast: String,
        zero: &'static str,
        timestamp: bool,
    },
    /// YEAR.
    Year,
    /// BIT(`bits`): a value stores as a big-endian number (`values::stored_bit`).
    Bit { bits: u32 },
    /// ENUM: its elements (a value stores as an element's position).
    Enum {
        elements: Vec<Vec<u8>>,
        case_insensitive: bool,
    },
    /// FLOAT, FLOAT(M,D) with a `scale`: a value stores as
    /// `floats::stored_float` computes, which hsd writes itself (the
    /// servers' CASTs to FLOAT differ); `unsigned` stores a negative value
    /// as 0.
    Float {
        scale: Option<floats::FloatScale>,
        unsigned: bool,
    },
    /// Anything else (decimal, double, ...), with the SQL type a value is
    /// CAST to so that it becomes what storing it would make (`None`:
    /// compared as text); `unsigned` (a DECIMAL or DOUBLE UNSIGNED) also
    /// stores a negative value as 0.
    Other {
        cast: Option<String>,
        unsigned: bool,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexMeta {
    /// `PRIMARY` for the primary key.
    pub name: String,
    /// The key columns as SQL expressions, in index order.
    pub key_sql: Vec<String>,
    /// The key columns' positions in the table (`None` for a part that is
    /// not a column, like SQLite's rowid).
    pub key_columns: Vec<Option<usize>>,
    /// Per key part, the prefix length of a prefix part (`key_sql` then
    /// names the prefix); empty when no part is one.
    pub key_prefix: Vec<Option<u64>>,
    /// Expressions appended to ORDER BY so equal keys come back in index order.
    pub tiebreak_sql: Vec<String>,
    /// The tiebreak columns' positions (`None` for the rowid).
    pub tiebreak_columns: Vec<Option<usize>>,
    /// FROM clause with whatever hint makes the database use this index.
    pub from_sql: String,
    /// At most one row per full key without NULLs (PRIMARY or UNIQUE); lets
    /// a backend merge concurrent point lookups into one statement.
    pub unique: bool,
    /// Readable in key order by a handler-level read (not FULLTEXT, SPATIAL,
    /// HASH, or hidden from the optimizer).
    pub ordered: bool,
    /// A HASH index (MEMORY tables' default): it keeps no order, and the
    /// original's engine found the rows equal to the key whatever the
    /// operator; scans on it do the same (`scan_sql`).
    pub hash: bool,
}

impl TableMeta {
    /// The column that locator part `i` names, if it is a column.
    pub fn locator_column(&self, i: usize) -> Option<&ColumnMeta> {
        let l = self.locator_sql.get(i)?;
        self.columns.iter().find(|c| &c.name_sql == l)
    }

    /// A column by its exact name (the original compares byte for byte).
    pub fn column_position(&self, name: &[u8]) -> Option<usize> {
        self.columns.iter().position(|c| c.name.as_bytes() == name)
    }

    /// An index as `P` names it, by the original's rules: a name starting
    /// with a digit is a key number (read as C's `atoi`: leading digits,
    /// then cut to a 32-bit int), the empty name is PRIMARY, any other name
    /// must match exactly.
    pub fn index_position(&self, name: &[u8]) -> Option<usize> {
        if name.first().is_some_and(u8::is_ascii_digit) {
            let mut n: i64 = 0;
            for &b in name.iter().take_while(|b| b.is_ascii_digit()) {
                n = n.saturating_mul(10).saturating_add(i64::from(b - b'0'));
            }
            let n = n as i32;
            return usize::try_from(n).ok().filter(|&n| n < self.indexes.len());
        }
        let want: &[u8] = if name.is_empty() { b"PRIMARY" } else { name };
        self.indexes.iter().position(|i| i.name.as_bytes() == want)
    }
}

/// A value an update stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteValue<'a> {
    /// Bytes (or NULL), stored as the original stored a request's value.
    Bytes(Option<&'a [u8]>),
    /// An integer, stored as a number (`+`/`-`: a DATE column given
    /// 20100103 holds 2010-01-03).
    Int(i64),
}

/// One row to insert, for `StorageConn::insert_rows`.
#[derive(Debug, Clone, Copy)]
pub struct RowInsert<'a> {
    pub table: &'a TableMeta,
    pub columns: &'a [usize],
    pub values: &'a [Option<&'a [u8]>],
    /// The row gives the auto-increment column a value of its own.
    pub explicit_id: bool,
}

/// One change of one row, for `StorageConn::write_rows`.
#[derive(Debug, Clone, Copy)]
pub struct RowWrite<'a> {
    pub table: &'a TableMeta,
    pub target: RowTarget<'a>,
    pub change: Change<'a>,
}

/// Which row a `RowWrite` changes.
#[derive(Debug, Clone, Copy)]
pub enum RowTarget<'a> {
    /// The row read before, named by its locator values.
    Locator(&'a [Value]),
    /// The one row that the whole key of a unique index finds (one value
    /// per key column, none NULL, each in the form the column stores it:
    /// `values::is_stored_form`), found and changed by one statement
    /// without reading it first. Planned only for a connection whose
    /// `write_batching` is `Batched`.
    Key {
        index: &'a OpenedIndex,
        keys: &'a [Option<&'a [u8]>],
    },
}

#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// Set these table columns to these values (none: the row is found
    /// and counted, nothing is written).
    Update {
        columns: &'a [usize],
        values: &'a [WriteValue<'a>],
    },
    Delete,
}

/// How a storage connection takes a group's writes. The executor plans
/// each write once either way (`exec::plan`); this only decides how many
/// go to the connection at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteBatching {
    /// One write at a time: a statement is a function call (the embedded
    /// store).
    OneAtATime,
    /// Every statement is a round trip: runs of alike writes go together
    /// (rows read by one `scan_many`, inserted by one `insert_rows`,
    /// changed by one `write_rows`), and a `U`/`D` by the whole key of a
    /// unique index is made by key (`RowTarget::Key`) without a read.
    Batched,
}

/// An index opened with `P`: which table, index, returned and filter columns.
/// Shared between connections that open the same thing; `id` is unique per
/// distinct opening and lets the executor group requests on the same index.
#[derive(Debug)]
pub struct OpenedIndex {
    pub id: u64,
    pub table: Arc<TableMeta>,
    pub index: usize,
    pub columns: Vec<usize>,
    pub filter_columns: Vec<usize>,
}

impl OpenedIndex {
    pub fn index_meta(&self) -> &IndexMeta {
        &self.table.indexes[self.index]
    }

    pub fn key_len(&self) -> usize {
        self.index_meta().key_sql.len()
    }

    /// The opened columns whose text rounds the stored value (table column
    /// numbers, in opened order): a row read to be changed also carries
    /// each one's exact value (`RowView::exact`).
    pub fn exact_columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.columns
            .iter()
            .copied()
            .filter(|&c| self.table.columns[c].text_rounds())
    }
}

/// A filter with its column resolved to a table column.
#[derive(Debug, Clone)]
pub struct ResolvedFilter {
    pub kind: FilterKind,
    pub op: FilterOp,
    pub column: usize,
    pub value: Value,
}

/// How filters take part in a scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FilterMode {
    /// No filters.
    None,
    /// Only `F` filters and no IN: they go into WHERE, so LIMIT can count.
    InWhere,
    /// Each row carries a state column: 0 passes, 1 skip (F false), 2 stop (W
    /// false), decided by the first false filter in request order.
    /// `exclude_skipped` also drops state-1 rows in WHERE.
    StateColumn { exclude_skipped: bool },
}

/// One index scan for the database to run: where it starts, which way it
/// goes, what it returns. Built by the executor, turned into SQL by
/// `scan_sql` and run by a backend.
#[derive(Debug)]
pub struct Scan<'a> {
    pub index: &'a OpenedIndex,
    pub op: FindOp,
    pub keys: Vec<Option<&'a [u8]>>,
    pub filters: &'a [ResolvedFilter],
    pub filter_mode: FilterMode,
    /// At most this many rows (SQL LIMIT).
    pub fetch: u64,
    /// Also select the row locator and the row's position in the index
    /// (for modify).
    pub with_locator: bool,
    /// Only rows strictly after this position (the values of the index's
    /// key and tiebreak columns of a row read before) in the scan's
    /// direction: a modify walks the index one row at a time, as the
    /// original's cursor did, and sees what its earlier changes moved.
    pub after: Option<&'a [Value]>,
}

/// What a row's filters say about it. A scan with filters computes it in
/// SQL, in its state column (`scan_sql`): the numbers are the column's
/// values, so the SQL text and this type must agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterVerdict {
    /// Every filter holds (or the scan has none).
    Pass = 0,
    /// An `F` filter is false: the row is skipped.
    Skip = 1,
    /// A `W` filter is false: the scan ends here.
    Stop = 2,
}

impl FilterVerdict {
    /// The verdict a state column's value names (anything else passes).
    pub fn from_state(n: i64) -> FilterVerdict {
        match n {
            1 => FilterVerdict::Skip,
            2 => FilterVerdict::Stop,
            _ => FilterVerdict::Pass,
        }
    }
}

/// A row as a backend hands it to the executor. Columns are the opened
/// `columns`, as the database's own text or NULL.
pub trait RowView {
    fn column(&self, i: usize) -> Option<&[u8]>;
    /// What the row's filters say; `Pass` when the scan has no state column.
    fn filter_state(&self) -> FilterVerdict;
    /// The locator values (only when the scan asked for them).
    fn locator(&self) -> Vec<Value>;
    /// In a row read with its locator: the exact value of the `k`-th
    /// opened column whose text rounds it (`ColumnMeta::text_rounds`,
    /// counted in opened order), as a number's text.
    fn exact(&self, k: usize) -> Option<&[u8]>;
}

/// What the executor wants after a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStep {
    Continue,
    /// Stop this scan (the others of a `scan_many` still run).
    Stop,
}

/// The visitor `scan_many` calls with each row: (scan number, row).
pub type RowVisitor<'v> = dyn FnMut(usize, &dyn RowView) -> ScanStep + 'v;

/// A row read whole, every opened column as the server's text or NULL.
pub type OwnedRow = Vec<Option<Box<[u8]>>>;

/// What `read_for_cache` read for one scan: its rows, or `None` where the
/// read could not be ordered after the commit of every write to them (the
/// caller reads that scan with `scan_many` and stores nothing).
pub type CacheRead = Option<Vec<OwnedRow>>;

/// One connection to a database, owned by one event-loop thread.
///
/// The methods are `async` because a network database answers later; the
/// embedded store answers at once and never suspends. Callers are generic
/// over the connection type, so no call goes through a vtable and no future
/// is boxed; futures need not be `Send` (they never leave their thread).
#[allow(async_fn_in_trait)]
pub trait StorageConn {
    /// Reads a table's metadata.
    async fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError>;

    /// Runs scans in order, calling `visit(scan_number, row)` for every row.
    /// A backend may run them as one statement; rows of scan `i` all come
    /// before rows of scan `i + 1`.
    async fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError>;

    /// Reads rows for a cache that a change feed keeps exact (the row
    /// cache), outside any transaction. A row is handed back only if no
    /// write to it can still be uncommitted: the feed may report a change
    /// before its commit is visible, and a row read in between must not be
    /// stored. MySQL: a locking read that does not wait (a row a writer
    /// holds answers `None`). The default reads nothing for the cache.
    async fn read_for_cache(&mut self, scans: &[Scan<'_>]) -> Result<Vec<CacheRead>, StorageError> {
        Ok(vec![None; scans.len()])
    }

    /// How this connection takes a group's writes.
    fn write_batching(&self) -> WriteBatching;

    /// Inserts rows in order; one result per row: the auto-increment id
    /// when the table has one. A backend may send them as few statements.
    async fn insert_rows(
        &mut self,
        rows: &[RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>>;

    /// Applies changes in order; one result per change: how many rows its
    /// target found (0 or 1). A backend may send them as few statements.
    async fn write_rows(&mut self, writes: &[RowWrite<'_>]) -> Vec<Result<u64, StorageError>>;

    /// Keeps this backend's other connections from reading rows of `table`
    /// to change them until `end_serialized`: for a table without
    /// transactions, whose rows a locking read does not lock, so that two
    /// write loops' read-modify-writes of one row cannot interleave (an
    /// increment read by both and stored twice). A connection holds one at
    /// a time. Fails when it cannot be had within the backend's timeout.
    async fn serialize_modifies(&mut self, _table: &TableMeta) -> Result<(), StorageError> {
        Ok(())
    }

    /// Ends what `serialize_modifies` began.
    fn end_serialized(&mut self) {}

    /// Starts the transaction a group of writes shares.
    async fn begin(&mut self) -> Result<(), StorageError>;
    /// Commits the group. A failure names the dbs whose writes were not
    /// committed, so that exactly those writes are answered with an error.
    /// The others may need a sync step before they are durable (see
    /// `Durability`); they are answered only after it.
    async fn commit(&mut self) -> Committed;
    async fn rollback(&mut self);

    /// When this connection holds something it must give back if it stays
    /// idle (MySQL: HANDLER table handles, which block DDL while open).
    fn idle_deadline(&self) -> Option<std::time::Instant> {
        None
    }

    /// Gives back what must not be held idle; called at `idle_deadline`
    /// when no work came.
    async fn release_idle(&mut self) {}
}

/// What a group commit did.
pub struct Committed {
    /// The dbs whose writes were rolled back, and why (`None`: none).
    pub failure: Option<CommitFailure>,
    /// How the writes that were committed reach the disk.
    pub durability: Durability,
}

impl Committed {
    /// Everything committed, durable already.
    pub fn done() -> Committed {
        Committed {
            failure: None,
            durability: Durability::Done,
        }
    }

    /// Nothing committed.
    pub fn failed(failure: CommitFailure) -> Committed {
        Committed {
            failure: Some(failure),
            durability: Durability::Done,
        }
    }
}

/// How a committed group reaches the disk.
pub enum Durability {
    /// It is durable already (or durability was not asked for).
    Done,
    /// It is durable once this has run (it may block on the disk); the
    /// committer runs it before answering.
    Sync(SyncStep),
}

/// A step that makes committed writes durable (e.g. fdatasync of a log).
pub type SyncStep = Box<dyn FnOnce() -> Result<(), CommitFailure> + Send>;

/// A group commit that did not commit everything.
#[derive(Debug)]
pub struct CommitFailure {
    pub error: StorageError,
    /// The dbs whose writes were rolled back; `None` when all of them were
    /// (one transaction spans the whole group).
    pub dbs: Option<Vec<String>>,
}

impl CommitFailure {
    /// Everything the group wrote was rolled back.
    pub fn all(error: StorageError) -> CommitFailure {
        CommitFailure { error, dbs: None }
    }

    /// Whether a write to `db` was rolled back.
    pub fn lost(&self, db: &str) -> bool {
        self.dbs
            .as_ref()
            .is_none_or(|dbs| dbs.iter().any(|d| d == db))
    }
}

/// A kind of storage: one value shared by every event loop, which makes the
/// connections each loop owns.
#[allow(async_fn_in_trait)]
pub trait Backend: Send + Sync + 'static {
    type Storage: StorageConn;
    /// Where the reads of the loops' batchers run (`read_router`).
    type Router: ReadRouter;
    /// Opens a connection for the calling event loop (with several
    /// servers: to the one that takes writes, following it).
    async fn connect(&self) -> Result<Self::Storage, StorageError>;
    /// How the reads of `side` are routed. A backend with one place to
    /// read from answers a router of one place.
    fn read_router(&self, side: ReadSide) -> Arc<Self::Router>;
    /// Opens a connection to place `place` of `router` (one this backend's
    /// `read_router` made); with a router of one place, `connect`'s.
    async fn connect_at(
        &self,
        router: &Self::Router,
        place: usize,
    ) -> Result<Self::Storage, StorageError> {
        let _ = (router, place);
        self.connect().await
    }
    /// A short name for logs (never includes a password).
    fn describe_target(&self) -> String;
    /// What the storage does with a text value's bytes (the memcached
    /// door refuses what would not read back as given).
    fn text_rules(&self) -> TextRules;
    /// How an event loop runs reads on this storage (see `dispatch`).
    fn read_placement(&self) -> ReadPlacement;
    /// Whether the storage that takes writes can be reached, for the admin
    /// endpoint's readiness probe: `Err` says why not, in one line. Cheap:
    /// a backend answers from what it saw last when that is recent. The
    /// embedded store is always there.
    fn reachable(&self) -> Reachability<'_> {
        Box::pin(std::future::ready(Ok(())))
    }
}

/// What a backend does with text: MySQL and MariaDB convert it to the
/// column's character set (cutting or replacing what it cannot hold);
/// SQLite keeps a TEXT value's bytes as given, whatever they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextRules {
    Charsets,
    KeepsBytes,
}

/// What `Backend::reachable` answers, boxed so that the admin endpoint's
/// task (spawned, so `Send`) can wait on it for any backend.
pub type Reachability<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>>;

/// Whose reads a router routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadSide {
    /// The finds of the port that writes: they run where the writes go,
    /// and so see every write the moment it is answered.
    Writes,
    /// The finds of the read port: they may run wherever the backend's
    /// routing sends them (`--read-from`), provided that place has seen
    /// what the router says they must.
    Reads,
}

/// Where the reads of a batcher run when a backend has several places that
/// can serve them (a primary and its replicas; a row cache whose position
/// is what its reader applied). The loops (`read_batch`) ask it where a
/// batch may run and what its reads must have seen, and tell it when a
/// place failed; places are numbers, positions opaque to them.
#[allow(async_fn_in_trait)]
pub trait ReadRouter: Send + Sync + 'static {
    /// What a read must have seen (applied transactions, a log position).
    /// The loops only carry it from a read's arrival to its batch.
    type Position: Send + Sync + 'static;
    /// Held while a batch runs where `route` sent it (a count of the
    /// place's reads in flight, say).
    type Lease;

    /// How many places there are, numbered from 0; a batcher keeps a
    /// connection per place (`Backend::connect_at`). With one nothing is
    /// routed: every read runs there, and a failure is its answer.
    fn places(&self) -> usize;

    /// What a read arriving now must see: every write answered so far
    /// (`None`: nothing). A later one covers every earlier one, so the
    /// newest of a batch's stands for the whole batch.
    fn must_see(&self) -> Option<Arc<Self::Position>>;

    /// Where a batch of `reads` finds that must see `must_see` runs; it
    /// may wait for a place to catch up.
    async fn route(&self, must_see: Option<&Self::Position>, reads: usize) -> Route<Self::Lease>;

    /// Where a read runs that must see nothing but failed where `route`
    /// sent it: the place that has everything (the primary).
    fn fallback(&self) -> usize;

    /// Reads at `place` failed because it could not be reached: `route`
    /// sends none there until it is known to be back.
    fn unreachable(&self, place: usize, error: &StorageError);

    /// Whether a read that failed with `error` failed for its place's sake
    /// (unreachable, or an error the backend knows says nothing about the
    /// data: a lock held there past the statement time, its connection
    /// limit), so that it may run again elsewhere and the place is left
    /// out as `unreachable` says.
    fn place_failed(&self, error: &StorageError) -> bool {
        error.is_unreachable()
    }
}

/// Where `ReadRouter::route` sends a batch; `_lease` is held while it runs.
pub struct Route<L> {
    pub place: usize,
    pub _lease: L,
}

/// The router of a backend with one place to read from.
#[derive(Debug, Clone, Copy, Default)]
pub struct OnePlace;

impl ReadRouter for OnePlace {
    type Position = ();
    type Lease = ();

    fn places(&self) -> usize {
        1
    }

    fn must_see(&self) -> Option<Arc<()>> {
        None
    }

    async fn route(&self, _: Option<&()>, _: usize) -> Route<()> {
        Route {
            place: 0,
            _lease: (),
        }
    }

    fn fallback(&self) -> usize {
        0
    }

    fn unreachable(&self, _: usize, _: &StorageError) {}
}

/// How reads reach the storage on an event loop (see `dispatch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadPlacement {
    /// Storage connections of each loop's read batcher, which runs the
    /// short finds (`exec::is_short`) that the loop's client connections
    /// queued meanwhile as one batch.
    pub links: usize,
    /// Where the other finds run, so that they never hold up short ones.
    pub long_reads: LongReads,
}

/// Where the finds that may read many rows run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LongReads {
    /// On this many storage connections of each loop, one client batch at
    /// a time: the storage answers later, and the loop is free meanwhile
    /// (a server across the network).
    Links(usize),
    /// On this many threads shared by every loop, each with a storage
    /// connection of its own: the storage computes on the calling thread
    /// (the embedded store), which a long scan would hold.
    Threads(usize),
}
