//! One live connection to MySQL/MariaDB: session settings, the cache of
//! prepared statements, and how the server's and driver's errors map to
//! `StorageError` (above all: which ones mean "this connection is gone").

use super::fxhash::FxHashMap;
use super::values::normalize_row;
use crate::backend::scan_sql::{ScanShape, ScanSql};
use crate::backend::{StorageError, ERR_DUPLICATE_KEY, ERR_NOT_NULL};
use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder, Params, Statement, Value};
use std::sync::Arc;
use std::time::Duration;

/// Most prepared statements one connection keeps; the least recently used
/// one is closed beyond it (the server's max_prepared_stmt_count is global).
const MAX_STATEMENTS: usize = 256;

/// A failure, and whether it cost us the connection.
#[derive(Debug)]
pub struct Failure {
    pub error: StorageError,
    /// The connection is unusable: drop it and connect again.
    pub link_lost: bool,
    /// The connection was closed by the server (EOF, reset): a statement that
    /// failed this way before anything was read may safely be retried on a
    /// fresh connection. False for timeouts, where retrying would double the wait.
    pub retryable: bool,
}

impl Failure {
    pub fn refused(code: u32, message: impl Into<String>) -> Failure {
        Failure {
            error: StorageError::Refused {
                code,
                message: message.into(),
            },
            link_lost: false,
            retryable: false,
        }
    }
}

/// MySQL server error numbers hsd treats specially.
pub mod codes {
    pub const ER_DUP_KEY: u16 = 1022;
    pub const ER_BAD_NULL_ERROR: u16 = 1048;
    pub const ER_SERVER_SHUTDOWN: u16 = 1053;
    pub const ER_DUP_ENTRY: u16 = 1062;
    pub const ER_NO_SUCH_TABLE: u16 = 1146;
    pub const ER_LOCK_DEADLOCK: u16 = 1213;
    pub const ER_DUP_ENTRY_WITH_KEY_NAME: u16 = 1586;
    pub const ER_CONNECTION_KILLED: u16 = 1927;
    pub const ER_BAD_DB_ERROR: u16 = 1049;
}

/// Maps a driver error; `what` says what was being done, for the log.
pub fn classify(e: mysql::Error, what: &str) -> Failure {
    use mysql::{DriverError, Error};
    match e {
        Error::MySqlError(me) => {
            let lost = matches!(
                me.code,
                codes::ER_SERVER_SHUTDOWN | codes::ER_CONNECTION_KILLED
            );
            if lost {
                return Failure {
                    error: StorageError::Unavailable(format!("{what}: {}", me.message)),
                    link_lost: true,
                    retryable: true,
                };
            }
            let code = match me.code {
                codes::ER_DUP_ENTRY | codes::ER_DUP_KEY | codes::ER_DUP_ENTRY_WITH_KEY_NAME => {
                    ERR_DUPLICATE_KEY
                }
                codes::ER_BAD_NULL_ERROR => ERR_NOT_NULL,
                other => u32::from(other),
            };
            Failure::refused(code, format!("{what}: {} ({})", me.message, me.code))
        }
        Error::IoError(io) => Failure {
            retryable: !is_timeout(&io),
            error: StorageError::Unavailable(format!("{what}: {io}")),
            link_lost: true,
        },
        Error::DriverError(
            d @ (DriverError::ConnectTimeout
            | DriverError::Timeout
            | DriverError::CouldNotConnect(_)),
        ) => Failure {
            error: StorageError::Unavailable(format!("{what}: {d}")),
            link_lost: true,
            retryable: false,
        },
        // Out-of-sync packets and the like: the stream cannot be trusted.
        Error::DriverError(
            d @ (DriverError::PacketOutOfSync
            | DriverError::UnexpectedPacket
            | DriverError::PacketTooLarge
            | DriverError::SetupError),
        ) => Failure {
            error: StorageError::Unavailable(format!("{what}: {d}")),
            link_lost: true,
            retryable: false,
        },
        // Misuse (parameter counts and the like): the connection is fine.
        Error::DriverError(d) => Failure::refused(1, format!("{what}: {d}")),
        // Socket errors while reading packets come wrapped in a codec error.
        Error::CodecError(c) => {
            use std::error::Error as _;
            let timeout = c
                .source()
                .and_then(|s| s.downcast_ref::<std::io::Error>())
                .is_some_and(is_timeout);
            Failure {
                error: StorageError::Unavailable(format!("{what}: {c}")),
                link_lost: true,
                retryable: !timeout,
            }
        }
        other => Failure::refused(1, format!("{what}: {other}")),
    }
}

/// A socket timeout (the peer hangs), as opposed to a closed connection.
fn is_timeout(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{TimedOut, WouldBlock};
    matches!(e.kind(), TimedOut | WouldBlock)
}

/// Which statement a cache entry is.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StmtKey {
    /// One scan on its own.
    Single(ScanShape),
    /// `n` point lookups of this shape in one `IN`/`OR` statement.
    Points(ScanShape, usize),
    /// `n` scans of this shape as one `UNION ALL`.
    Union(ScanShape, usize),
    /// A write or metadata statement, by its text.
    Text(String),
}

/// What a cached statement needs besides its text: how to bind and read it.
#[derive(Debug)]
pub enum Plan {
    /// A scan_sql statement; for `Union` the plan of one branch.
    Scan(ScanSql),
    /// Point lookups: key columns per lookup and whether the locator follows.
    Points {
        key_len: usize,
        locator_len: usize,
    },
    Text,
}

struct Cached {
    stmt: Statement,
    plan: Arc<Plan>,
    last_used: u64,
}

/// Session settings and timeouts of every connection.
#[derive(Debug, Clone)]
pub struct LinkSettings {
    pub opts: Opts,
    /// --mysql-timeout: connect, lock waits, statement time.
    pub timeout: Duration,
}

pub struct Link {
    conn: Conn,
    clock: u64,
    cache: FxHashMap<StmtKey, Cached>,
}

impl Link {
    pub fn connect(settings: &LinkSettings) -> Result<Link, Failure> {
        let t = settings.timeout;
        let opts = OptsBuilder::from_opts(settings.opts.clone())
            .tcp_connect_timeout(Some(t))
            .read_timeout(Some(t))
            .write_timeout(Some(t))
            // No client-side statement cache: `Link::cache` owns every
            // prepared statement.
            .stmt_cache_size(Some(0));
        let mut conn = Conn::new(opts).map_err(|e| classify(e, "connecting"))?;
        // The server's own limits end a statement a little before the socket
        // timeout does, so a slow statement reports the server's error (1205
        // lock wait, 1969 statement time) and keeps the connection.
        let lock_wait = (t.as_secs().max(2) - 1).max(1);
        let statement_time = t.saturating_sub((t / 4).min(Duration::from_millis(500)));
        // Non-strict like the original plugin; fresh reads; utf8mb4 text.
        let required = [
            "SET NAMES utf8mb4".to_string(),
            format!(
                "SET SESSION sql_mode = '', autocommit = 1, innodb_lock_wait_timeout = {lock_wait}"
            ),
            "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED".to_string(),
        ];
        for q in &required {
            conn.query_drop(q)
                .map_err(|e| classify(e, "setting up the session"))?;
        }
        // MariaDB takes seconds; MySQL has max_execution_time (ms, SELECT only).
        if conn
            .query_drop(format!(
                "SET SESSION max_statement_time = {:.3}",
                statement_time.as_secs_f64()
            ))
            .is_err()
        {
            let _ = conn.query_drop(format!(
                "SET SESSION max_execution_time = {}",
                statement_time.as_millis()
            ));
        }
        Ok(Link {
            conn,
            clock: 0,
            cache: FxHashMap::default(),
        })
    }

    /// The cached statement for `key`, prepared with `build` on a miss.
    pub fn prepare(
        &mut self,
        key: &StmtKey,
        build: impl FnOnce() -> (String, Plan),
    ) -> Result<(Statement, Arc<Plan>), Failure> {
        self.clock += 1;
        if let Some(c) = self.cache.get_mut(key) {
            c.last_used = self.clock;
            return Ok((c.stmt.clone(), c.plan.clone()));
        }
        let (sql, plan) = build();
        let stmt = self
            .conn
            .prep(&sql)
            .map_err(|e| classify(e, "preparing a statement"))?;
        if self.cache.len() >= MAX_STATEMENTS {
            self.evict_oldest();
        }
        let plan = Arc::new(plan);
        self.cache.insert(
            key.clone(),
            Cached {
                stmt: stmt.clone(),
                plan: plan.clone(),
                last_used: self.clock,
            },
        );
        Ok((stmt, plan))
    }

    fn evict_oldest(&mut self) {
        let oldest = self
            .cache
            .iter()
            .min_by_key(|(_, c)| c.last_used)
            .map(|(k, _)| k.clone());
        if let Some(k) = oldest {
            self.forget(&k);
        }
    }

    /// Closes a statement, e.g. after it failed: the table may have changed,
    /// and the next use prepares it afresh.
    pub fn forget(&mut self, key: &StmtKey) {
        if let Some(c) = self.cache.remove(key) {
            let _ = self.conn.close(c.stmt);
        }
    }

    /// Runs a prepared statement and hands each row, as text values, to
    /// `on_row` until it returns false.
    pub fn query_rows(
        &mut self,
        stmt: &Statement,
        params: Vec<Value>,
        mut on_row: impl FnMut(Vec<Value>) -> bool,
    ) -> Result<(), Failure> {
        let result = self
            .conn
            .exec_iter(stmt, Params::Positional(params))
            .map_err(|e| classify(e, "running a scan"))?;
        for row in result {
            let row = row.map_err(|e| classify(e, "reading rows"))?;
            if !on_row(normalize_row(row)) {
                break;
            }
        }
        Ok(())
    }

    /// Runs a prepared write; returns the last insert id of its OK packet.
    pub fn execute(&mut self, stmt: &Statement, params: Vec<Value>) -> Result<u64, Failure> {
        self.conn
            .exec_drop(stmt, Params::Positional(params))
            .map_err(|e| classify(e, "writing"))?;
        Ok(self.conn.last_insert_id())
    }

    pub fn simple(&mut self, sql: &str) -> Result<(), Failure> {
        self.conn.query_drop(sql).map_err(|e| classify(e, sql))
    }
}

impl Link {
    /// Runs a text-protocol statement (e.g. SHOW INDEX, which takes no
    /// parameters); returns the column names and the rows as text.
    pub fn text_rows(&mut self, sql: &str) -> Result<(Vec<String>, Vec<Vec<Value>>), Failure> {
        let mut result = self.conn.query_iter(sql).map_err(|e| classify(e, sql))?;
        let names: Vec<String> = result
            .columns()
            .as_ref()
            .iter()
            .map(|c| c.name_str().into_owned())
            .collect();
        let mut rows = Vec::new();
        for row in result.by_ref() {
            rows.push(normalize_row(row.map_err(|e| classify(e, sql))?));
        }
        Ok((names, rows))
    }

    /// Runs a cached prepared statement built from `sql` and returns all rows.
    pub fn prepared_rows(
        &mut self,
        sql: &str,
        params: Vec<Value>,
    ) -> Result<Vec<Vec<Value>>, Failure> {
        let key = StmtKey::Text(sql.to_string());
        let (stmt, _) = self.prepare(&key, || (sql.to_string(), Plan::Text))?;
        let mut rows = Vec::new();
        let r = self.query_rows(&stmt, params, |row| {
            rows.push(row);
            true
        });
        if r.is_err() {
            self.forget(&key);
        }
        r.map(|()| rows)
    }
}
