//! MySQL/MariaDB backend: serves the tables of an existing server
//! (`--backend mysql://user:password@host:port`).
//!
//! Each event loop owns its `MysqlConn`s, each one server connection
//! (`link::Link`) driven by the loop itself. There is no row or metadata
//! cache: every find reads the server's current rows, every `P` re-reads the
//! table's metadata.
//!
//! - `link`: the connection: login, session settings, pipelined statements.
//! - `meta`: describe a table (information_schema, SHOW INDEX).
//! - `scan`: `scan_many`: grouped lookups, `HANDLER` reads, SELECTs.
//! - `handler`: leases of `HANDLER` table handles.
//!
//! Faults: a connection that breaks is dropped and made again on next use. A
//! read that failed because the server closed the connection (restart,
//! wait_timeout) before any row came back is retried once on a new
//! connection, so a restart of the server costs clients no error once it is
//! back. While the server is unreachable, one caller at a time probes it and
//! the others fail at once (`StorageError::Unavailable`, `1 1 2013`).
//!
//! Writes: `begin` only marks the group; the session runs groups with
//! autocommit off, so the transaction begins with the group's first
//! statement and ends with `COMMIT`: no round trip to open it, and no
//! transaction (or metadata lock) is ever held idle. A group's inserts leave
//! as multi-row INSERTs and its other statements pipelined (`insert_rows`,
//! `write_rows`). A deadlock, or losing the connection
//! inside the group, dooms the group: its remaining writes and the commit
//! fail, so no write is reported done that the server rolled back.

mod handler;
mod link;
mod link_tls;
mod meta;
mod scan;

use self::handler::Handles;
use self::link::{Answer, Discard, Failure, Link, LinkSettings};
use super::write_sql::{self, WriteParam, WriteSink};
use super::{
    Backend, ColumnKind, ColumnMeta, CommitFailure, Committed, KeyedChange, KeyedWrite,
    ReadPlacement, RowInsert, RowVisitor, RowWrite, Scan, StorageConn, StorageError, TableMeta,
    WriteForm, WriteValue, ERR_DUPLICATE_KEY, ERR_NOT_NULL,
};
use hs_proto::Value as HsValue;
use mysql_wire::{ErrPacket, MysqlUrl, OkPacket};
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// After the server could not be reached, how long other callers fail at
/// once instead of each waiting for their own connect attempt.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

/// MySQL server error numbers hsd treats specially.
pub mod codes {
    pub const ER_DUP_KEY: u16 = 1022;
    pub const ER_BAD_NULL_ERROR: u16 = 1048;
    pub const ER_SERVER_SHUTDOWN: u16 = 1053;
    pub const ER_DUP_ENTRY: u16 = 1062;
    pub const ER_LOCK_DEADLOCK: u16 = 1213;
    pub const ER_DUP_ENTRY_WITH_KEY_NAME: u16 = 1586;
    pub const ER_CONNECTION_KILLED: u16 = 1927;
    pub const ER_LOCK_WAIT_TIMEOUT: u16 = 1205;
    pub const ER_ROW_IS_REFERENCED_2: u16 = 1451;
    pub const ER_NO_REFERENCED_ROW_2: u16 = 1452;
    pub const ER_AUTOINC_READ_FAILED: u16 = 1467;
}

/// The storage engine's handler error numbers the original answered
/// (`1 1 <n>`) where MariaDB's SQL layer reports its own.
mod handler_errors {
    pub const LOCK_WAIT_TIMEOUT: u32 = crate::backend::ERR_LOCK_WAIT_TIMEOUT;
    pub const LOCK_DEADLOCK: u32 = crate::backend::ERR_LOCK_DEADLOCK;
    pub const NO_REFERENCED_ROW: u32 = 151;
    pub const ROW_IS_REFERENCED: u32 = 152;
    pub const AUTO_INC_READ_FAILED: u32 = 166;
}

/// Settings the backend needs from the configuration.
#[derive(Debug, Clone)]
pub struct MysqlSettings {
    pub url: MysqlUrl,
    /// Shown in logs instead of the URL (no password).
    pub target: String,
    pub timeout: Duration,
    /// Read connections per event loop.
    pub links_per_loop: usize,
}

pub struct MysqlBackend {
    shared: Arc<Shared>,
    links_per_loop: usize,
}

struct Shared {
    settings: LinkSettings,
    target: String,
    /// Until when connect attempts fail at once (someone is probing, or the
    /// last attempt failed).
    paused_until: Mutex<Option<Instant>>,
}

impl MysqlBackend {
    /// Checks the account at start: a wrong password or URL is a
    /// configuration error; an unreachable server is not (hsd starts and
    /// connects once it is up).
    pub async fn start(settings: MysqlSettings) -> anyhow::Result<MysqlBackend> {
        let shared = Shared {
            settings: LinkSettings::new(settings.url, settings.timeout)
                .map_err(|e| anyhow::anyhow!("cannot use {}: {e}", settings.target))?,
            target: settings.target,
            paused_until: Mutex::new(None),
        };
        match Link::connect(&shared.settings).await {
            Ok(link) => {
                link::announce(&link, &shared.settings);
                link.quit().await
            }
            Err(f) if f.link_lost && !matches!(f.error, StorageError::Refused { .. }) => {
                tracing::warn!(
                    "cannot reach the MySQL server at {} ({}); hsd starts anyway and connects \
                     once it is up: start that server, or fix the host and port in --backend",
                    shared.settings.url.address(),
                    f.error
                )
            }
            Err(f) => anyhow::bail!("cannot use {}: {}", shared.target, f.error),
        }
        Ok(MysqlBackend {
            shared: Arc::new(shared),
            links_per_loop: settings.links_per_loop.max(1),
        })
    }
}

impl Shared {
    async fn open_link(&self) -> Result<Link, Failure> {
        let now = Instant::now();
        {
            let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(until) = *paused {
                if now < until {
                    return Err(Failure {
                        error: StorageError::Unavailable(format!(
                            "{} is not reachable; retrying shortly",
                            self.target
                        )),
                        // No connection was lost here (and the pause must
                        // not be extended by the callers it turns away).
                        link_lost: false,
                        retryable: false,
                    });
                }
                // This caller probes; the others fail fast meanwhile.
                *paused = Some(now + self.settings.timeout + RETRY_PAUSE);
            }
        }
        let result = Link::connect(&self.settings).await;
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        match &result {
            Ok(link) => {
                link::announce(link, &self.settings);
                if paused.is_some() {
                    tracing::info!(target = %self.target, "MySQL server reachable again");
                }
                *paused = None;
            }
            Err(f) if f.link_lost && !matches!(f.error, StorageError::Refused { .. }) => {
                if paused.is_none() {
                    tracing::warn!(target = %self.target, error = %f.error, "cannot connect to MySQL server");
                } else {
                    tracing::debug!(target = %self.target, error = %f.error, "MySQL server still not reachable");
                }
                *paused = Some(Instant::now() + RETRY_PAUSE);
            }
            // The server answered (e.g. refused the login): it is up.
            Err(_) => *paused = None,
        }
        result
    }

    /// A live connection timed out: make the others fail fast for a while.
    fn note_timeout(&self) {
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        *paused = Some(Instant::now() + RETRY_PAUSE);
    }
}

impl Backend for MysqlBackend {
    type Storage = MysqlConn;

    async fn connect(&self) -> Result<MysqlConn, StorageError> {
        // The server connection itself is made on first use.
        Ok(MysqlConn {
            shared: self.shared.clone(),
            link: None,
            handles: Handles::default(),
            txn: Txn::Off,
            sql: Vec::with_capacity(256),
        })
    }

    fn describe_target(&self) -> String {
        self.shared.target.clone()
    }

    fn read_placement(&self) -> ReadPlacement {
        ReadPlacement::Batched {
            links: self.links_per_loop,
        }
    }
}

/// Where the write group's transaction is.
#[derive(Debug)]
enum Txn {
    /// Autocommit (reads, and writes outside a group).
    Off,
    /// `begin` was called; the transaction begins with the group's first
    /// statement (the session runs with autocommit off in groups).
    Wanted,
    Open,
    /// The server rolled the transaction back, or the connection broke: the
    /// rest of the group and its commit fail with this.
    Doomed(StorageError),
}

pub struct MysqlConn {
    shared: Arc<Shared>,
    link: Option<Link>,
    handles: Handles,
    txn: Txn,
    /// Reused for write statements' text.
    sql: Vec<u8>,
}

/// A server error as a client sees it.
pub fn refused_error(e: &ErrPacket) -> StorageError {
    let code = match e.code {
        codes::ER_DUP_ENTRY | codes::ER_DUP_KEY | codes::ER_DUP_ENTRY_WITH_KEY_NAME => {
            ERR_DUPLICATE_KEY
        }
        codes::ER_BAD_NULL_ERROR => ERR_NOT_NULL,
        codes::ER_LOCK_WAIT_TIMEOUT => handler_errors::LOCK_WAIT_TIMEOUT,
        codes::ER_LOCK_DEADLOCK => handler_errors::LOCK_DEADLOCK,
        codes::ER_NO_REFERENCED_ROW_2 => handler_errors::NO_REFERENCED_ROW,
        codes::ER_ROW_IS_REFERENCED_2 => handler_errors::ROW_IS_REFERENCED,
        codes::ER_AUTOINC_READ_FAILED => handler_errors::AUTO_INC_READ_FAILED,
        other => u32::from(other),
    };
    if matches!(
        e.code,
        codes::ER_SERVER_SHUTDOWN | codes::ER_CONNECTION_KILLED
    ) {
        return StorageError::Unavailable(e.to_string());
    }
    StorageError::Refused {
        code,
        message: e.to_string(),
    }
}

/// The server rolled back the whole transaction, not just the statement.
fn dooms_transaction(e: &StorageError) -> bool {
    matches!(e, StorageError::Refused { code, .. } if *code == handler_errors::LOCK_DEADLOCK)
        || matches!(e, StorageError::Unavailable(_))
}

/// Writes a write statement's values as binary literals: the server stores
/// them into the columns as the original stored the bytes it was given.
struct WriteLiterals<'a> {
    values: &'a [WriteValue<'a>],
    locator: &'a [HsValue],
}

impl WriteSink for WriteLiterals<'_> {
    fn value(&mut self, sql: &mut Vec<u8>, param: WriteParam) {
        let v = match param {
            WriteParam::Value(i) => match self.values.get(i) {
                Some(WriteValue::Int(n)) => {
                    sql.extend_from_slice(n.to_string().as_bytes());
                    return;
                }
                Some(WriteValue::Bytes(v)) => *v,
                None => None,
            },
            WriteParam::Locator(i) => self.locator.get(i).and_then(|l| l.as_deref()),
        };
        mysql_wire::literal::push_binary(sql, v);
    }

    fn column_value(&mut self, sql: &mut Vec<u8>, param: WriteParam, column: &ColumnMeta) {
        match column.write_form {
            WriteForm::Plain => self.value(sql, param),
            WriteForm::Generated => sql.extend_from_slice(b"DEFAULT"),
            WriteForm::Json => {
                let v = match param {
                    WriteParam::Value(i) => self.values.get(i),
                    WriteParam::Locator(_) => None,
                };
                match v {
                    Some(WriteValue::Int(n)) => json_text(sql, n.to_string().as_bytes()),
                    Some(WriteValue::Bytes(Some(b))) => json_text(sql, b),
                    _ => self.value(sql, param),
                }
            }
        }
    }
}

/// JSON text as MySQL's JSON type takes it: a string in utf8mb4 (a binary
/// string is refused, 3144), which the server parses (3140 when invalid).
fn json_text(sql: &mut Vec<u8>, text: &[u8]) {
    sql.extend_from_slice(b"CONVERT(");
    mysql_wire::literal::push_binary(sql, Some(text));
    sql.extend_from_slice(b" USING utf8mb4)");
}

impl MysqlConn {
    /// A live connection, made on demand.
    async fn link(&mut self) -> Result<&mut Link, Failure> {
        live_link(&mut self.link, &mut self.handles, &self.shared).await
    }

    /// Books a failure; `Ok` when the operation may be tried again on a new
    /// connection (`idempotent`, nothing was read yet, first attempt).
    fn after_failure(
        &mut self,
        f: Failure,
        idempotent: bool,
        progressed: bool,
        attempt: u32,
    ) -> Result<(), StorageError> {
        if f.link_lost {
            self.link = None;
            self.handles.clear();
            if !f.retryable {
                self.shared.note_timeout();
            }
        }
        let in_txn = matches!(self.txn, Txn::Open);
        if in_txn && (f.link_lost || dooms_transaction(&f.error)) {
            tracing::warn!(error = %f.error, "write group's transaction lost; the group fails");
            self.txn = Txn::Doomed(f.error.clone());
            return Err(f.error);
        }
        let may_retry = (idempotent || matches!(self.txn, Txn::Wanted))
            && !in_txn
            && f.link_lost
            && f.retryable
            && !progressed
            && attempt < 2;
        if may_retry {
            tracing::debug!(error = %f.error, "connection closed by the server; retrying on a new one");
            Ok(())
        } else {
            Err(f.error)
        }
    }

    /// Puts the session in the mode the next statements need, queued ahead
    /// of them without a round trip of its own: autocommit off inside a
    /// write group (its transaction begins with its first statement, and
    /// when a deadlock rolls it back, statements already sent behind the
    /// failed one run in a new transaction that the group's rollback ends,
    /// instead of committing on their own), on outside one.
    async fn ensure_session(&mut self) -> Result<(), Failure> {
        let in_group = matches!(self.txn, Txn::Wanted | Txn::Open);
        let link = self.link().await?;
        if link.autocommit == in_group {
            link.queue_quiet(if in_group {
                b"SET autocommit = 0"
            } else {
                b"SET autocommit = 1"
            });
            link.autocommit = !in_group;
        }
        Ok(())
    }

    /// Runs the write statements whose texts are `spans` of `self.sql`,
    /// pipelined: they leave in one write and their answers are read in
    /// order. One result per statement. A statement that dooms the group
    /// fails the ones behind it too.
    async fn run_writes(&mut self, spans: &[Range<usize>]) -> Vec<Result<OkPacket, StorageError>> {
        if let Txn::Doomed(e) = &self.txn {
            return spans.iter().map(|_| Err(doomed(e))).collect();
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut results: Vec<Result<OkPacket, StorageError>> = Vec::with_capacity(spans.len());
            let outcome = async {
                self.ensure_session().await?;
                let link = live_link(&mut self.link, &mut self.handles, &self.shared).await?;
                for span in spans {
                    let text = &self.sql[span.clone()];
                    link.queue(|out| out.extend_from_slice(text));
                }
                for _ in spans {
                    results.push(match link.answer(&mut Discard).await? {
                        Answer::Done(ok) => Ok(ok),
                        Answer::Refused(e) => Err(refused_error(&e)),
                    });
                }
                Ok::<(), Failure>(())
            }
            .await;
            if !results.is_empty() && matches!(self.txn, Txn::Wanted) {
                self.txn = Txn::Open;
            }
            if matches!(self.txn, Txn::Open) {
                let first_doom = results
                    .iter()
                    .position(|r| matches!(r, Err(e) if dooms_transaction(e)));
                if let Some(k) = first_doom {
                    if let Err(e) = &results[k] {
                        let e = e.clone();
                        for later in &mut results[k + 1..] {
                            *later = Err(doomed(&e));
                        }
                        self.txn = Txn::Doomed(e);
                    }
                }
            }
            let Err(f) = outcome else {
                return results;
            };
            let answered = results.len();
            let error = match self.after_failure(f, false, answered > 0, attempt) {
                Ok(()) => continue,
                Err(e) => e,
            };
            // The link broke: what was not answered is lost (and in a group,
            // what was answered is too: the commit fails).
            results.resize_with(spans.len(), || Err(error.clone()));
            return results;
        }
    }

    /// Runs the write statement in `self.sql`; returns its OK packet's
    /// insert id.
    async fn write(&mut self) -> Result<u64, StorageError> {
        let span = 0..self.sql.len();
        match self.run_writes(&[span]).await.pop() {
            Some(result) => result.map(|ok| ok.last_insert_id),
            None => Err(StorageError::Unavailable("no answer".into())),
        }
    }

    /// Closes every HANDLER handle (so a waiting DDL can go on).
    async fn release_handles(&mut self) {
        let Some(link) = self.link.as_mut() else {
            self.handles.clear();
            return;
        };
        let n = self.handles.close_all(link);
        if n == 0 {
            return;
        }
        tracing::trace!(handles = n, "closing idle HANDLER handles");
        let mut ok = true;
        for _ in 0..n {
            if link.answer(&mut Discard).await.is_err() {
                ok = false;
                break;
            }
        }
        if !ok {
            self.link = None;
        }
    }
}

/// The connection in `slot`, made first if there is none (a new server
/// connection has no HANDLER handles open).
async fn live_link<'a>(
    slot: &'a mut Option<Link>,
    handles: &mut Handles,
    shared: &Shared,
) -> Result<&'a mut Link, Failure> {
    if slot.is_none() {
        handles.clear();
        *slot = Some(shared.open_link().await?);
    }
    slot.as_mut().ok_or_else(|| Failure {
        error: StorageError::Unavailable("no connection".into()),
        link_lost: true,
        retryable: false,
    })
}

fn doomed(e: &StorageError) -> StorageError {
    match e {
        StorageError::Unavailable(m) => {
            StorageError::Unavailable(format!("earlier in this write group: {m}"))
        }
        StorageError::Refused { code, message } => StorageError::Refused {
            code: *code,
            message: format!("earlier in this write group: {message}"),
        },
        other => other.clone(),
    }
}

impl StorageConn for MysqlConn {
    async fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = async {
                self.ensure_session().await?;
                let link = self.link().await?;
                meta::describe(link, db, table).await
            }
            .await;
            match result {
                // Handles need nothing here: the server reopens a handle on
                // a changed table, rows are read by column name, and the
                // lease bounds how long one lives.
                Ok(meta) => return Ok(meta),
                Err(f) => self.after_failure(f, true, false, attempt)?,
            }
        }
    }

    async fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        if let Txn::Doomed(e) = &self.txn {
            return Err(doomed(e));
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut progressed = false;
            let result = async {
                self.ensure_session().await?;
                let link = live_link(&mut self.link, &mut self.handles, &self.shared).await?;
                scan::scan_many(link, &mut self.handles, scans, visit, &mut progressed).await
            }
            .await;
            let answered =
                result.is_ok() || progressed || matches!(&result, Err(f) if !f.link_lost);
            if answered && matches!(self.txn, Txn::Wanted) {
                self.txn = Txn::Open;
            }
            match result {
                Ok(()) => return Ok(()),
                Err(f) if !f.link_lost => {
                    // A statement failed; the link is fine and in step.
                    if matches!(self.txn, Txn::Open) && dooms_transaction(&f.error) {
                        self.txn = Txn::Doomed(f.error.clone());
                    }
                    return Err(f.error);
                }
                Err(f) => self.after_failure(f, true, progressed, attempt)?,
            }
        }
    }

    async fn insert(
        &mut self,
        table: &TableMeta,
        columns: &[usize],
        values: &[Option<&[u8]>],
    ) -> Result<Option<u64>, StorageError> {
        self.sql.clear();
        let values: Vec<WriteValue<'_>> = values.iter().map(|v| WriteValue::Bytes(*v)).collect();
        let mut sink = WriteLiterals {
            values: &values,
            locator: &[],
        };
        write_sql::insert(table, columns, &mut sink, &mut self.sql);
        let id = self.write().await?;
        Ok(table.has_autoincrement.then_some(id))
    }

    async fn update(
        &mut self,
        table: &TableMeta,
        locator: &[HsValue],
        columns: &[usize],
        values: &[WriteValue<'_>],
    ) -> Result<(), StorageError> {
        if columns.is_empty() {
            return Ok(());
        }
        self.sql.clear();
        let mut sink = WriteLiterals { values, locator };
        write_sql::update(table, columns, &mut sink, &mut self.sql);
        self.write().await.map(|_| ())
    }

    async fn delete(&mut self, table: &TableMeta, locator: &[HsValue]) -> Result<(), StorageError> {
        self.sql.clear();
        let mut sink = WriteLiterals {
            values: &[],
            locator,
        };
        write_sql::delete(table, &mut sink, &mut self.sql);
        self.write().await.map(|_| ())
    }

    /// Every statement is a round trip: write groups come in batches.
    fn batches_writes(&self) -> bool {
        true
    }

    /// Consecutive rows for the same table and columns that generate no id
    /// leave as one multi-row INSERT, other rows as single INSERTs
    /// pipelined ahead of it. A multi-row INSERT is the last statement of
    /// its round trip: when it fails (a statement fails whole), its rows are
    /// sent again one by one, so each gets its own answer, before any later
    /// row runs.
    ///
    /// Rows that take a generated id always go one by one: a multi-row
    /// INSERT that fails has used up the ids it reserved, and the rows sent
    /// again would then get other ids than the original gives them.
    async fn insert_rows(
        &mut self,
        rows: &[RowInsert<'_>],
    ) -> Vec<Result<Option<u64>, StorageError>> {
        let mut results = Vec::with_capacity(rows.len());
        let mut next = 0;
        while next < rows.len() {
            self.sql.clear();
            let mut spans: Vec<Range<usize>> = Vec::new();
            let mut runs: Vec<Range<usize>> = Vec::new();
            while next < rows.len() && self.sql.len() < BATCH_SQL_BYTES {
                let from = self.sql.len();
                let end = push_insert_run(rows, next, &mut self.sql);
                spans.push(from..self.sql.len());
                runs.push(next..end);
                next = end;
                if end - runs[runs.len() - 1].start > 1 {
                    break;
                }
            }
            let answers = self.run_writes(&spans).await;
            for (run, answer) in runs.into_iter().zip(answers) {
                match answer {
                    Ok(ok) => {
                        // A multi-row INSERT's rows generate no id: their
                        // answers ignore the number.
                        for row in &rows[run] {
                            let id = ok.last_insert_id;
                            results.push(Ok(row.table.has_autoincrement.then_some(id)));
                        }
                    }
                    Err(e) if run.len() > 1 && !matches!(self.txn, Txn::Doomed(_)) => {
                        tracing::debug!(rows = run.len(), error = %e, "multi-row INSERT failed; its rows go one by one");
                        self.sql.clear();
                        let mut spans = Vec::with_capacity(run.len());
                        for row in &rows[run.clone()] {
                            let from = self.sql.len();
                            push_insert(row, &mut self.sql);
                            spans.push(from..self.sql.len());
                        }
                        let answers = self.run_writes(&spans).await;
                        for (row, answer) in rows[run].iter().zip(answers) {
                            results.push(answer.map(|ok| {
                                row.table.has_autoincrement.then_some(ok.last_insert_id)
                            }));
                        }
                    }
                    Err(e) => results.extend(run.map(|_| Err(e.clone()))),
                }
            }
        }
        results
    }

    /// Consecutive updates of the same columns of one table that no unique
    /// key depends on leave as one UPDATE (a CASE on the locator picks each
    /// row's values), the rest as single statements pipelined ahead of it.
    /// Like a multi-row INSERT, a merged UPDATE ends its round trip, and when
    /// it fails its rows are sent again one by one before anything later.
    /// (With a unique column written, one statement could succeed where the
    /// same changes one after another fail: a value two rows swap.)
    async fn write_rows(&mut self, writes: &[RowWrite<'_>]) -> Vec<Result<(), StorageError>> {
        let mut results = Vec::with_capacity(writes.len());
        let mut next = 0;
        while next < writes.len() {
            self.sql.clear();
            let mut spans: Vec<Range<usize>> = Vec::new();
            let mut runs: Vec<Range<usize>> = Vec::new();
            while next < writes.len() && self.sql.len() < BATCH_SQL_BYTES {
                let from = self.sql.len();
                let end = push_write_run(writes, next, &mut self.sql);
                let start = next;
                next = end;
                if from == self.sql.len() {
                    // An update of no column: nothing to send.
                    runs.push(start..end);
                    spans.push(from..from);
                    continue;
                }
                spans.push(from..self.sql.len());
                runs.push(start..end);
                if end - start > 1 {
                    break;
                }
            }
            let sent: Vec<Range<usize>> = spans.iter().filter(|s| !s.is_empty()).cloned().collect();
            let mut answers = self.run_writes(&sent).await.into_iter();
            for (run, span) in runs.into_iter().zip(spans) {
                if span.is_empty() {
                    results.push(Ok(()));
                    continue;
                }
                let answer = answers
                    .next()
                    .unwrap_or_else(|| Err(StorageError::Unavailable("no answer".into())));
                match answer {
                    Ok(_) => results.extend(run.map(|_| Ok(()))),
                    Err(e) if run.len() > 1 && !matches!(self.txn, Txn::Doomed(_)) => {
                        tracing::debug!(rows = run.len(), error = %e, "merged UPDATE failed; its rows go one by one");
                        self.sql.clear();
                        let mut spans = Vec::with_capacity(run.len());
                        for w in &writes[run.clone()] {
                            let from = self.sql.len();
                            push_write(w, &mut self.sql);
                            spans.push(from..self.sql.len());
                        }
                        let answers = self.run_writes(&spans).await;
                        results.extend(answers.into_iter().map(|a| a.map(|_| ())));
                    }
                    Err(e) => results.extend(run.map(|_| Err(e.clone()))),
                }
            }
        }
        results
    }

    /// Keys written exactly as the server stores them compare in SQL as the
    /// locking read would find them (the same test grouped lookups use).
    fn can_write_by_key(&self, write: &KeyedWrite<'_>) -> bool {
        let meta = write.index.index_meta();
        let table = &write.index.table;
        meta.unique
            && !meta.key_sql.is_empty()
            && write.keys.len() == meta.key_sql.len()
            && meta.key_prefix.iter().all(Option::is_none)
            && write.keys.iter().zip(&meta.key_columns).all(|(k, c)| {
                matches!((k, c), (Some(k), Some(c)) if scan::canonical(&table.columns[*c].kind, k))
            })
    }

    /// `UPDATE t SET ... WHERE k = v ...` / `DELETE FROM t WHERE k = v ...`,
    /// pipelined; the count is the rows the statement found (the link asks
    /// for found rows, not changed ones, as the original counted).
    async fn write_by_keys(&mut self, writes: &[KeyedWrite<'_>]) -> Vec<Result<u64, StorageError>> {
        self.sql.clear();
        let mut spans: Vec<Range<usize>> = Vec::with_capacity(writes.len());
        for w in writes {
            let from = self.sql.len();
            let table = &w.index.table;
            match w.change {
                KeyedChange::Update { columns, values } => {
                    let mut sink = WriteLiterals {
                        values,
                        locator: &[],
                    };
                    write_sql::update_set(table, columns, &mut sink, &mut self.sql);
                }
                KeyedChange::Delete => {
                    self.sql.extend_from_slice(b"DELETE FROM ");
                    self.sql.extend_from_slice(table.table_sql.as_bytes());
                }
            }
            let meta = w.index.index_meta();
            self.sql.extend_from_slice(b" WHERE ");
            for (n, ((col, c), k)) in meta
                .key_sql
                .iter()
                .zip(&meta.key_columns)
                .zip(w.keys)
                .enumerate()
            {
                if n > 0 {
                    self.sql.extend_from_slice(b" AND ");
                }
                self.sql.extend_from_slice(col.as_bytes());
                self.sql.extend_from_slice(b" = ");
                let kind = c.map_or(&scan::TEXT_KIND, |c| &table.columns[c].kind);
                scan::push_key(&mut self.sql, kind, *k);
            }
            spans.push(from..self.sql.len());
        }
        self.run_writes(&spans)
            .await
            .into_iter()
            .map(|r| r.map(|ok| ok.affected_rows))
            .collect()
    }

    async fn begin(&mut self) -> Result<(), StorageError> {
        if matches!(self.txn, Txn::Open | Txn::Doomed(_)) {
            // A group was left open (should not happen): end it first.
            self.rollback().await;
        }
        self.txn = Txn::Wanted;
        Ok(())
    }

    /// COMMIT returns once InnoDB made the group durable (as configured by
    /// innodb_flush_log_at_trx_commit). One transaction: all or nothing.
    async fn commit(&mut self) -> Committed {
        match std::mem::replace(&mut self.txn, Txn::Off) {
            Txn::Off | Txn::Wanted => Committed::done(),
            Txn::Open => {
                let Some(link) = self.link.as_mut() else {
                    return Committed::failed(CommitFailure::all(StorageError::Unavailable(
                        "connection lost before commit".into(),
                    )));
                };
                link.queue(|sql| sql.extend_from_slice(b"COMMIT"));
                match link.answer(&mut Discard).await {
                    Ok(Answer::Done(_)) => Committed::done(),
                    Ok(Answer::Refused(e)) => {
                        Committed::failed(CommitFailure::all(refused_error(&e)))
                    }
                    Err(f) => {
                        self.link = None;
                        self.handles.clear();
                        Committed::failed(CommitFailure::all(f.error))
                    }
                }
            }
            Txn::Doomed(e) => {
                self.roll_back_link().await;
                Committed::failed(CommitFailure::all(doomed(&e)))
            }
        }
    }

    async fn rollback(&mut self) {
        let was_open = matches!(self.txn, Txn::Open | Txn::Doomed(_));
        self.txn = Txn::Off;
        if was_open {
            self.roll_back_link().await;
        }
    }

    fn idle_deadline(&self) -> Option<Instant> {
        self.handles.next_expiry()
    }

    async fn release_idle(&mut self) {
        self.release_handles().await;
    }
}

/// How much statement text one round trip of inserts carries, at most
/// (well inside the server's default max_allowed_packet of 16 MiB).
const BATCH_SQL_BYTES: usize = 1 << 20;

/// Writes the INSERT of `rows[start]` and of the rows after it that can
/// share its statement: same table and columns, no generated id. Returns
/// the end of the rows written.
fn push_insert_run(rows: &[RowInsert<'_>], start: usize, sql: &mut Vec<u8>) -> usize {
    let first = &rows[start];
    push_insert(first, sql);
    if first.table.has_autoincrement && !first.explicit_id {
        return start + 1;
    }
    let mut end = start + 1;
    while end < rows.len() && sql.len() < BATCH_SQL_BYTES && same_statement(first, &rows[end]) {
        let values: Vec<WriteValue<'_>> = rows[end]
            .values
            .iter()
            .map(|v| WriteValue::Bytes(*v))
            .collect();
        let mut sink = WriteLiterals {
            values: &values,
            locator: &[],
        };
        sql.extend_from_slice(b", ");
        write_sql::values_row(rows[end].table, rows[end].columns, &mut sink, sql);
        end += 1;
    }
    end
}

/// Whether row `b` can go in the same INSERT as row `a`.
fn same_statement(a: &RowInsert<'_>, b: &RowInsert<'_>) -> bool {
    a.explicit_id == b.explicit_id
        && a.table.table_sql == b.table.table_sql
        && a.columns.len() == b.columns.len()
        && a.columns
            .iter()
            .zip(b.columns)
            .all(|(&x, &y)| a.table.columns[x].name_sql == b.table.columns[y].name_sql)
}

/// Writes one row's INSERT.
fn push_insert(row: &RowInsert<'_>, sql: &mut Vec<u8>) {
    let values: Vec<WriteValue<'_>> = row.values.iter().map(|v| WriteValue::Bytes(*v)).collect();
    let mut sink = WriteLiterals {
        values: &values,
        locator: &[],
    };
    write_sql::insert(row.table, row.columns, &mut sink, sql);
}

/// Writes the statement of `writes[start]` and of the updates after it
/// that can share it (see `write_rows`). Returns the end of the writes
/// written; writes nothing for an update of no column.
fn push_write_run(writes: &[RowWrite<'_>], start: usize, sql: &mut Vec<u8>) -> usize {
    let mut end = start + 1;
    while end < writes.len() && mergeable(&writes[start], &writes[end]) {
        end += 1;
    }
    if end - start == 1 {
        push_write(&writes[start], sql);
        return end;
    }
    // Cut where the text would grow past the batch budget.
    let run = &writes[start..end];
    let mut rows = run.len();
    let estimate: usize = run.iter().map(write_size).sum();
    if estimate > BATCH_SQL_BYTES {
        let mut total = 0;
        rows = run
            .iter()
            .take_while(|w| {
                total += write_size(w);
                total <= BATCH_SQL_BYTES
            })
            .count()
            .max(1);
    }
    if rows == 1 {
        push_write(&writes[start], sql);
        return start + 1;
    }
    push_update_many(&run[..rows], sql);
    start + rows
}

/// One write's statement; nothing for an update of no column.
fn push_write(w: &RowWrite<'_>, sql: &mut Vec<u8>) {
    match *w {
        RowWrite::Update {
            table,
            locator,
            columns,
            values,
        } => {
            if !columns.is_empty() {
                let mut sink = WriteLiterals { values, locator };
                write_sql::update(table, columns, &mut sink, sql);
            }
        }
        RowWrite::Delete { table, locator } => {
            let mut sink = WriteLiterals {
                values: &[],
                locator,
            };
            write_sql::delete(table, &mut sink, sql);
        }
    }
}

/// Roughly how much statement text a write takes.
fn write_size(w: &RowWrite<'_>) -> usize {
    let bytes = |v: &Option<&[u8]>| v.map_or(4, |b| 2 * b.len() + 4);
    match w {
        RowWrite::Update {
            locator, values, ..
        } => {
            locator.iter().map(|l| bytes(&l.as_deref())).sum::<usize>()
                + values
                    .iter()
                    .map(|v| match v {
                        WriteValue::Int(_) => 20,
                        WriteValue::Bytes(b) => bytes(b),
                    })
                    .sum::<usize>()
                + 32
        }
        RowWrite::Delete { .. } => 64,
    }
}

/// Whether update `b` can share update `a`'s statement: same table and
/// columns, values of the same kinds, and no written column in a unique
/// key.
fn mergeable(a: &RowWrite<'_>, b: &RowWrite<'_>) -> bool {
    let (
        RowWrite::Update {
            table: ta,
            columns: ca,
            values: va,
            ..
        },
        RowWrite::Update {
            table: tb,
            columns: cb,
            values: vb,
            ..
        },
    ) = (a, b)
    else {
        return false;
    };
    let kind = |v: &WriteValue<'_>| match v {
        WriteValue::Int(_) => 1,
        WriteValue::Bytes(Some(_)) => 2,
        WriteValue::Bytes(None) => 0,
    };
    !ca.is_empty()
        && ta.table_sql == tb.table_sql
        && ca.len() == cb.len()
        && ca
            .iter()
            .zip(cb.iter())
            .all(|(&x, &y)| ta.columns[x].name_sql == tb.columns[y].name_sql)
        && va.iter().zip(vb.iter()).all(|(x, y)| {
            let (kx, ky) = (kind(x), kind(y));
            kx == ky || kx == 0 || ky == 0
        })
        && !writes_a_unique_key(ta, ca)
        && ta.locator_sql.iter().all(|l| locator_kind(ta, l).is_some())
}

/// How a merged UPDATE writes a locator column's values, for the columns
/// whose comparisons in a CASE are exact: integers as numbers (a string
/// there would compare as a floating-point number) and bytes (text and
/// binary columns compare `_binary` literals byte for byte). `None` for the
/// other kinds, which stay single statements.
fn locator_kind(table: &TableMeta, locator_sql: &str) -> Option<bool> {
    let column = table.columns.iter().find(|c| c.name_sql == locator_sql)?;
    match column.kind {
        ColumnKind::Integer { .. } => Some(true),
        ColumnKind::Text { .. } | ColumnKind::Bytes { .. } => Some(false),
        _ => None,
    }
}

/// A locator value in a merged UPDATE (see `locator_kind`).
fn push_locator_value(sql: &mut Vec<u8>, integer: bool, v: Option<&[u8]>) {
    match v {
        Some(digits)
            if integer
                && !digits.is_empty()
                && digits.iter().enumerate().all(|(i, b)| {
                    b.is_ascii_digit() || (i == 0 && *b == b'-' && digits.len() > 1)
                }) =>
        {
            sql.extend_from_slice(digits)
        }
        _ => mysql_wire::literal::push_binary(sql, v),
    }
}

/// Whether one of `columns` is part of a unique index (or of an index
/// whose columns are not all known).
fn writes_a_unique_key(table: &TableMeta, columns: &[usize]) -> bool {
    table.indexes.iter().filter(|i| i.unique).any(|i| {
        i.key_columns
            .iter()
            .any(|k| k.is_none_or(|k| columns.contains(&k)))
    })
}

/// `UPDATE t SET c = CASE WHEN <row 1> THEN v1 WHEN ... END, ... WHERE
/// <row 1> OR ...`, a row named by its locator (with a one-column locator,
/// `CASE l WHEN x1 THEN v1 ...` and `l IN (x1, ...)`).
fn push_update_many(writes: &[RowWrite<'_>], sql: &mut Vec<u8>) {
    let RowWrite::Update { table, columns, .. } = writes[0] else {
        return;
    };
    let single = table.locator_sql.len() == 1;
    let row_test = |w: &RowWrite<'_>, sql: &mut Vec<u8>| {
        let locator = match w {
            RowWrite::Update { locator, .. } | RowWrite::Delete { locator, .. } => *locator,
        };
        for (n, l) in table.locator_sql.iter().enumerate() {
            if n > 0 {
                sql.extend_from_slice(b" AND ");
            }
            if !single {
                sql.extend_from_slice(l.as_bytes());
                sql.extend_from_slice(b" = ");
            }
            let integer = locator_kind(table, l) == Some(true);
            push_locator_value(sql, integer, locator.get(n).and_then(|v| v.as_deref()));
        }
    };
    sql.extend_from_slice(b"UPDATE ");
    sql.extend_from_slice(table.table_sql.as_bytes());
    sql.extend_from_slice(b" SET ");
    for (k, &c) in columns.iter().enumerate() {
        if k > 0 {
            sql.extend_from_slice(b", ");
        }
        sql.extend_from_slice(table.columns[c].name_sql.as_bytes());
        if table.columns[c].write_form == WriteForm::Generated {
            // The server computes it; DEFAULT may not stand inside a CASE.
            sql.extend_from_slice(b" = DEFAULT");
            continue;
        }
        sql.extend_from_slice(b" = CASE");
        if single {
            sql.push(b' ');
            sql.extend_from_slice(table.locator_sql[0].as_bytes());
        }
        for w in writes {
            let RowWrite::Update {
                locator, values, ..
            } = *w
            else {
                continue;
            };
            sql.extend_from_slice(b" WHEN ");
            row_test(w, sql);
            sql.extend_from_slice(b" THEN ");
            let mut sink = WriteLiterals { values, locator };
            sink.column_value(sql, WriteParam::Value(k), &table.columns[c]);
        }
        sql.extend_from_slice(b" END");
    }
    sql.extend_from_slice(b" WHERE ");
    if single {
        sql.extend_from_slice(table.locator_sql[0].as_bytes());
        sql.extend_from_slice(b" IN (");
    }
    for (n, w) in writes.iter().enumerate() {
        if n > 0 {
            sql.extend_from_slice(if single { b", " } else { b" OR " });
        }
        if !single {
            sql.push(b'(');
        }
        row_test(w, sql);
        if !single {
            sql.push(b')');
        }
    }
    if single {
        sql.push(b')');
    }
}

impl MysqlConn {
    async fn roll_back_link(&mut self) {
        if let Some(link) = self.link.as_mut() {
            link.queue(|sql| sql.extend_from_slice(b"ROLLBACK"));
            if link.answer(&mut Discard).await.is_err() {
                self.link = None;
                self.handles.clear();
            }
        }
    }
}
