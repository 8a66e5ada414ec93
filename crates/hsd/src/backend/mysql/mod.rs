//! MySQL/MariaDB backend: serves the tables of an existing server
//! (`--backend mysql://user:password@host:port`).
//!
//! Each worker thread owns one `MysqlConn`, which owns one server connection
//! (`link::Link`) and its prepared statements. There is no row or metadata
//! cache: every find reads the server's current rows, every `P` re-reads the
//! table's metadata.
//!
//! - `meta`: describe a table (information_schema, SHOW INDEX).
//! - `scan`: `scan_many`, grouping a batch's lookups into few statements.
//! - `values`: bytes in, the server's own text out.
//! - `link`: connection setup, statement cache, error mapping.
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

mod fxhash;
mod link;
mod meta;
mod scan;
mod values;

use self::link::{Failure, Link, LinkSettings, Plan, StmtKey};
use self::values::param;
use super::{
    write_sql, Backend, CommitFailure, RowVisitor, Scan, StorageConn, StorageError, TableMeta,
};
use crate::config::Config;
use hs_proto::Value as HsValue;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// After the server could not be reached, how long other callers fail at
/// once instead of each waiting for their own connect attempt.
const RETRY_PAUSE: Duration = Duration::from_millis(500);

pub struct MysqlBackend {
    shared: Arc<Shared>,
}

struct Shared {
    settings: LinkSettings,
    target: String,
    /// Until when connect attempts fail at once (someone is probing, or the
    /// last attempt failed).
    paused_until: Mutex<Option<Instant>>,
}

impl MysqlBackend {
    pub fn from_config(config: &Config) -> anyhow::Result<MysqlBackend> {
        let url = &config.backend;
        let target = crate::server::redact(url);
        let opts = mysql::Opts::from_url(url)
            .map_err(|e| anyhow::anyhow!("invalid MySQL URL {target}: {e}"))?;
        let mut builder = mysql::OptsBuilder::from_opts(opts);
        if !url.contains("prefer_socket") {
            // Keep to the address given (the driver would switch to the
            // server's unix socket when it runs on this host).
            builder = builder.prefer_socket(false);
        }
        let shared = Shared {
            settings: LinkSettings {
                opts: builder.into(),
                timeout: config.mysql_timeout,
            },
            target,
            paused_until: Mutex::new(None),
        };
        // A wrong password or URL is a configuration error: fail at startup.
        // An unreachable server is not: hsd starts and connects once it is up.
        match Link::connect(&shared.settings) {
            Ok(_) => {}
            Err(f) if f.link_lost => {
                tracing::warn!(target = %shared.target, error = %f.error, "MySQL server not reachable yet; requests fail until it is")
            }
            Err(f) => anyhow::bail!("cannot use {}: {}", shared.target, f.error),
        }
        Ok(MysqlBackend {
            shared: Arc::new(shared),
        })
    }
}

impl Shared {
    fn open_link(&self) -> Result<Link, Failure> {
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
        let result = Link::connect(&self.settings);
        let mut paused = self.paused_until.lock().unwrap_or_else(|p| p.into_inner());
        match &result {
            Ok(_) => {
                if paused.is_some() {
                    tracing::info!(target = %self.target, "MySQL server reachable again");
                }
                *paused = None;
            }
            Err(f) if f.link_lost => {
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
    fn connect(&self) -> Result<Box<dyn StorageConn>, StorageError> {
        let link = self.shared.open_link().map_err(|f| f.error)?;
        Ok(Box::new(MysqlConn {
            shared: self.shared.clone(),
            link: Some(link),
            txn: Txn::Off,
        }))
    }

    fn describe_target(&self) -> String {
        self.shared.target.clone()
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
    Doomed {
        code: u32,
        message: String,
    },
}

pub struct MysqlConn {
    shared: Arc<Shared>,
    link: Option<Link>,
    txn: Txn,
}

/// The server rolled back the whole transaction, not just the statement.
fn dooms_transaction(f: &Failure) -> bool {
    f.link_lost
        || matches!(f.error, StorageError::Refused { code, .. } if code == u32::from(link::codes::ER_LOCK_DEADLOCK))
}

impl MysqlConn {
    /// Runs `op` on a live connection inside the group's transaction if there
    /// is one. `idempotent` ops are retried once on a new connection when the
    /// server had closed the old one and `op` reported no progress.
    fn run<T>(
        &mut self,
        idempotent: bool,
        mut op: impl FnMut(&mut Link, &mut bool) -> Result<T, Failure>,
    ) -> Result<T, StorageError> {
        if let Txn::Doomed { code, message } = &self.txn {
            return Err(doomed_error(*code, message));
        }
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut progressed = false;
            let result = self.attempt(&mut op, &mut progressed);
            let f = match result {
                Ok(v) => return Ok(v),
                Err(f) => f,
            };
            if f.link_lost {
                self.link = None;
                if !f.retryable {
                    self.shared.note_timeout();
                }
            }
            let in_txn = matches!(self.txn, Txn::Open);
            if in_txn && dooms_transaction(&f) {
                let (code, message) = match &f.error {
                    StorageError::Refused { code, message } => (*code, message.clone()),
                    other => (other.client_code(), other.to_string()),
                };
                tracing::warn!(error = %f.error, "write group's transaction lost; the group fails");
                self.txn = Txn::Doomed { code, message };
                return Err(f.error);
            }
            let may_retry = (idempotent || matches!(self.txn, Txn::Wanted))
                && !in_txn
                && f.link_lost
                && f.retryable
                && !progressed
                && attempt < 2;
            if !may_retry {
                return Err(f.error);
            }
            tracing::debug!(error = %f.error, "connection closed by the server; retrying on a new one");
        }
    }

    fn attempt<T>(
        &mut self,
        op: &mut impl FnMut(&mut Link, &mut bool) -> Result<T, Failure>,
        progressed: &mut bool,
    ) -> Result<T, Failure> {
        if self.link.is_none() {
            self.link = Some(self.shared.open_link()?);
        }
        let Some(link) = self.link.as_mut() else {
            return Err(Failure::refused(1, "no connection"));
        };
        if matches!(self.txn, Txn::Wanted) {
            link.simple("START TRANSACTION")?;
            self.txn = Txn::Open;
        }
        op(link, progressed)
    }

    /// Runs a cached write statement; returns the OK packet's insert id.
    fn write(&mut self, sql: String, params: Vec<mysql::Value>) -> Result<u64, StorageError> {
        let key = StmtKey::Text(sql.clone());
        self.run(false, |link, _| {
            let (stmt, _) = link.prepare(&key, || (sql.clone(), Plan::Text))?;
            link.execute(&stmt, params.clone()).inspect_err(|f| {
                if !f.link_lost && stale_statement(&f.error) {
                    link.forget(&key);
                }
            })
        })
    }
}

fn doomed_error(code: u32, message: &str) -> StorageError {
    if code == super::ERR_UNAVAILABLE {
        StorageError::Unavailable(format!("earlier in this write group: {message}"))
    } else {
        StorageError::Refused {
            code,
            message: format!("earlier in this write group: {message}"),
        }
    }
}

/// Errors after which a prepared write should be prepared again (the table
/// changed under it); others (duplicate key, ...) keep it.
fn stale_statement(e: &StorageError) -> bool {
    const ER_BAD_FIELD_ERROR: u32 = 1054;
    const ER_NEED_REPREPARE: u32 = 1615;
    matches!(e, StorageError::Refused { code, .. }
        if *code == ER_BAD_FIELD_ERROR
            || *code == ER_NEED_REPREPARE
            || *code == u32::from(link::codes::ER_NO_SUCH_TABLE)
            || *code == u32::from(link::codes::ER_BAD_DB_ERROR))
}

impl StorageConn for MysqlConn {
    fn describe(&mut self, db: &str, table: &str) -> Result<TableMeta, StorageError> {
        self.run(true, |link, _| meta::describe(link, db, table))
    }

    fn scan_many(
        &mut self,
        scans: &[Scan<'_>],
        visit: &mut RowVisitor<'_>,
    ) -> Result<(), StorageError> {
        self.run(true, |link, progressed| {
            scan::scan_many(link, scans, visit, progressed)
        })
    }

    fn insert(
        &mut self,
        table: &TableMeta,
        columns: &[usize],
        values: &[Option<&[u8]>],
    ) -> Result<Option<u64>, StorageError> {
        let sql = write_sql::insert(table, columns);
        let params = values.iter().map(|v| param(*v)).collect();
        let id = self.write(sql, params)?;
        Ok(table.has_autoincrement.then_some(id))
    }

    fn update(
        &mut self,
        table: &TableMeta,
        locator: &[HsValue],
        columns: &[usize],
        values: &[Option<&[u8]>],
    ) -> Result<(), StorageError> {
        if columns.is_empty() {
            return Ok(());
        }
        let sql = write_sql::update(table, columns);
        let params = values
            .iter()
            .map(|v| param(*v))
            .chain(locator.iter().map(|l| param(l.as_deref())))
            .collect();
        self.write(sql, params).map(|_| ())
    }

    fn delete(&mut self, table: &TableMeta, locator: &[HsValue]) -> Result<(), StorageError> {
        let sql = write_sql::delete(table);
        let params = locator.iter().map(|l| param(l.as_deref())).collect();
        self.write(sql, params).map(|_| ())
    }

    fn begin(&mut self) -> Result<(), StorageError> {
        if matches!(self.txn, Txn::Open) {
            // A group was left open (should not happen): end it first.
            let _ = self.rollback();
        }
        self.txn = Txn::Wanted;
        Ok(())
    }

    fn commit(&mut self) -> Result<(), CommitFailure> {
        self.commit_group().map_err(CommitFailure::all)
    }

    fn rollback(&mut self) -> Result<(), StorageError> {
        let was_open = matches!(self.txn, Txn::Open | Txn::Doomed { .. });
        self.txn = Txn::Off;
        if was_open {
            if let Some(link) = self.link.as_mut() {
                if link.simple("ROLLBACK").is_err() {
                    self.link = None;
                }
            }
        }
        Ok(())
    }
}

impl MysqlConn {
    /// COMMIT of the group's one transaction (all or nothing).
    fn commit_group(&mut self) -> Result<(), StorageError> {
        match std::mem::replace(&mut self.txn, Txn::Off) {
            Txn::Off | Txn::Wanted => Ok(()),
            Txn::Open => {
                let Some(link) = self.link.as_mut() else {
                    return Err(StorageError::Unavailable(
                        "connection lost before commit".into(),
                    ));
                };
                link.simple("COMMIT").map_err(|f| {
                    if f.link_lost {
                        self.link = None;
                    }
                    f.error
                })
            }
            Txn::Doomed { code, message } => {
                if let Some(link) = self.link.as_mut() {
                    if link.simple("ROLLBACK").is_err() {
                        self.link = None;
                    }
                }
                Err(doomed_error(code, &message))
            }
        }
    }
}
