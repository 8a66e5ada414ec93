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
//! Writes: `begin` only marks the group; `START TRANSACTION` is sent with the
//! group's first statement and `COMMIT` at its end, so no transaction (and
//! no metadata lock) is ever held idle. A deadlock, or losing the connection
//! inside the group, dooms the group: its remaining writes and the commit
//! fail, so no write is reported done that the server rolled back.

mod handler;
mod link;
mod meta;
mod scan;

use self::handler::Handles;
use self::link::{Answer, Discard, Failure, Link, LinkSettings};
use super::write_sql::{self, WriteParam, WriteSink};
use super::{
    Backend, CommitFailure, Committed, ReadPlacement, RowVisitor, Scan, StorageConn, StorageError,
    TableMeta, WriteValue, ERR_DUPLICATE_KEY, ERR_NOT_NULL,
};
use hs_proto::Value as HsValue;
use mysql_wire::{ErrPacket, MysqlUrl};
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
    pub const LOCK_WAIT_TIMEOUT: u32 = 146;
    pub const LOCK_DEADLOCK: u32 = 149;
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
            settings: LinkSettings {
                url: settings.url,
                timeout: settings.timeout,
            },
            target: settings.target,
            paused_until: Mutex::new(None),
        };
        match Link::connect(&shared.settings).await {
            Ok(link) => link.quit().await,
            Err(f) if f.link_lost && !matches!(f.error, StorageError::Refused { .. }) => {
                tracing::warn!(
                    target = %shared.target,
                    error = %f.error,
                    "MySQL server not reachable yet; requests answer 1 1 2013 until it is \
                     (start that server, or fix the host and port in --backend)"
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
            Ok(_) => {
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
    type Conn = MysqlConn;

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
    /// `begin` was called; START TRANSACTION goes out with the first statement.
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

    /// Queues START TRANSACTION when the group wants one and has none yet.
    async fn ensure_transaction(&mut self) -> Result<(), Failure> {
        if matches!(self.txn, Txn::Wanted) {
            let link = self.link().await?;
            link.queue(|sql| sql.extend_from_slice(b"START TRANSACTION"));
            if let Answer::Refused(e) = link.answer(&mut Discard).await? {
                return Err(Failure {
                    error: refused_error(&e),
                    link_lost: false,
                    retryable: false,
                });
            }
            self.txn = Txn::Open;
        }
        Ok(())
    }

    /// Runs the write statement in `self.sql`; returns its OK packet's
    /// insert id.
    async fn write(&mut self) -> Result<u64, StorageError> {
        if let Txn::Doomed(e) = &self.txn {
            return Err(doomed(e));
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let result = async {
                self.ensure_transaction().await?;
                let link = live_link(&mut self.link, &mut self.handles, &self.shared).await?;
                let sql = &self.sql;
                link.queue(|out| out.extend_from_slice(sql));
                match link.answer(&mut Discard).await? {
                    Answer::Done(ok) => Ok(Ok(ok.last_insert_id)),
                    Answer::Refused(e) => Ok(Err(refused_error(&e))),
                }
            }
            .await;
            match result {
                Ok(Ok(id)) => return Ok(id),
                Ok(Err(e)) => {
                    if matches!(self.txn, Txn::Open) && dooms_transaction(&e) {
                        self.txn = Txn::Doomed(e.clone());
                    }
                    return Err(e);
                }
                Err(f) => self.after_failure(f, false, false, attempt)?,
            }
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
                self.ensure_transaction().await?;
                let link = live_link(&mut self.link, &mut self.handles, &self.shared).await?;
                scan::scan_many(link, &mut self.handles, scans, visit, &mut progressed).await
            }
            .await;
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
