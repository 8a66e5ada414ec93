//! MySQL/MariaDB backend: serves the tables of an existing server
//! (`--backend mysql://user:password@host:port`).
//!
//! Each event loop owns its `MysqlConn`s, each one server connection
//! (`link::Link`) driven by the loop itself. There is no row or metadata
//! cache: every find reads the server's current rows, every `P` re-reads the
//! table's metadata.
//!
//! - `connector`: makes server connections; fails fast while the server is down.
//! - `link`: one server connection: login, session settings, pipelined statements.
//! - `conn`: the storage connection (`MysqlConn`): its link, its transaction
//!   and the retry rules.
//! - `errors`: the server's error numbers as clients see them.
//! - `meta`: describe a table (information_schema, SHOW INDEX).
//! - `scan`: `scan_many`: routes each scan to grouped lookups (`points`),
//!   `HANDLER` reads (`handler`) or SELECTs; `rows` is a result row as the
//!   executor sees it.
//! - `literal`: values as SQL literals; `batch_sql`: a group's merged writes.
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

mod batch_sql;
mod conn;
mod connector;
mod errors;
mod handler;
mod link;
mod literal;
mod meta;
mod points;
mod rows;
mod scan;
pub mod topology;

pub use self::conn::MysqlConn;
use self::connector::Connector;
use self::link::{Link, LinkSettings};
use super::{Backend, ReadPlacement, StorageError};
use mysql_wire::MysqlUrl;
use std::sync::Arc;
use std::time::Duration;

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
    connector: Arc<Connector>,
    links_per_loop: usize,
}

impl MysqlBackend {
    /// Checks the account at start: a wrong password or URL is a
    /// configuration error; an unreachable server is not (hsd starts and
    /// connects once it is up).
    pub async fn start(settings: MysqlSettings) -> anyhow::Result<MysqlBackend> {
        let connector = Connector::new(
            LinkSettings {
                url: settings.url,
                timeout: settings.timeout,
            },
            settings.target,
        );
        match Link::connect(&connector.settings).await {
            Ok(link) => link.quit().await,
            Err(f) if f.link_lost && !matches!(f.error, StorageError::Refused { .. }) => {
                tracing::warn!(
                    "cannot reach the MySQL server at {} ({}); hsd starts anyway and connects \
                     once it is up: start that server, or fix the host and port in --backend",
                    connector.settings.url.address(),
                    f.error
                )
            }
            Err(f) => anyhow::bail!("cannot use {}: {}", connector.target, f.error),
        }
        Ok(MysqlBackend {
            connector: Arc::new(connector),
            links_per_loop: settings.links_per_loop.max(1),
        })
    }
}

impl Backend for MysqlBackend {
    type Storage = MysqlConn;

    async fn connect(&self) -> Result<MysqlConn, StorageError> {
        // The server connection itself is made on first use.
        Ok(MysqlConn::new(self.connector.clone()))
    }

    fn describe_target(&self) -> String {
        self.connector.target.clone()
    }

    fn read_placement(&self) -> ReadPlacement {
        ReadPlacement::Batched {
            links: self.links_per_loop,
        }
    }
}
