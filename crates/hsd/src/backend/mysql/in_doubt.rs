//! A COMMIT whose answer never came, resolved before it is answered.
//!
//! When the server or the network stalls after COMMIT was sent (past
//! `--mysql-timeout`), or the connection breaks then, the group may or may
//! not have committed: the server runs a COMMIT it has read even when the
//! client is gone. Answering such writes as failed made clients that retry
//! apply them twice. So each write group also marks, in its own
//! transaction, that it committed: one row per write connection in an
//! hsd-owned InnoDB table (`commit-marker` in the URL; `hsd.commit_marker`
//! by default) holds the sequence number of the connection's last
//! committed group. The statement travels with the COMMIT, in the same
//! round trip.
//!
//! After such a failure, hsd connects afresh, ends the stalled session
//! (`KILL CONNECTION`: a COMMIT the server had not run is then rolled back),
//! waits until the session is gone from the process list (its transaction
//! is then committed or rolled back for good), and reads the marker: the
//! group's number there means committed, anything else rolled back. The
//! writes are answered accordingly. Only when the server stays unreachable
//! for `RESOLVE_TIMEOUTS` times `--mysql-timeout` are they answered with
//! `ERR_COMMIT_IN_DOUBT`: their outcome is unknown.

use super::connector::Connector;
use super::link::{Answer, Discard, FirstValue, Link};
use super::meta::quote;
use crate::backend::StorageError;
use std::time::{Duration, Instant};

/// How many times `--mysql-timeout` an in-doubt COMMIT may take to resolve
/// before it is answered as in doubt.
const RESOLVE_TIMEOUTS: u32 = 4;
/// Pause between tries while the server cannot be reached, and between
/// looks at the process list.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// MySQL's "Unknown thread id": the session is gone already.
const ER_NO_SUCH_THREAD: u16 = 1094;

/// Where write groups mark their commits: the table's SQL name.
#[derive(Debug, Clone)]
pub(super) struct MarkerTable {
    pub(super) db_sql: String,
    pub(super) table_sql: String,
}

impl MarkerTable {
    pub(super) fn new(db: &str, table: &str) -> MarkerTable {
        MarkerTable {
            db_sql: quote(db),
            table_sql: format!("{}.{}", quote(db), quote(table)),
        }
    }

    /// Creates the database and table if they are missing; forgets the
    /// rows of writers not seen for a week (hsd processes long gone).
    pub(super) async fn ensure(&self, link: &mut Link) -> Result<(), StorageError> {
        let probe = format!("SELECT writer, seq FROM {} LIMIT 0", self.table_sql);
        if let Answer::Done(_) = query(link, &probe, &mut Discard).await? {
            let purge = self.purge();
            // Best effort: an account may write the table but not delete.
            query(link, &purge, &mut Discard).await?;
            return Ok(());
        }
        let statements = [
            format!("CREATE DATABASE IF NOT EXISTS {}", self.db_sql),
            format!(
                "CREATE TABLE IF NOT EXISTS {} (writer BIGINT UNSIGNED NOT NULL PRIMARY KEY, \
                 seq BIGINT UNSIGNED NOT NULL, at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP \
                 ON UPDATE CURRENT_TIMESTAMP) ENGINE=InnoDB",
                self.table_sql
            ),
        ];
        for s in &statements {
            link.queue(|sql| sql.extend_from_slice(s.as_bytes()));
        }
        let mut first_error = None;
        for s in &statements {
            let answer = link.answer(&mut Discard).await.map_err(|f| f.error)?;
            if let Answer::Refused(e) = answer {
                first_error.get_or_insert_with(|| format!("{s}: {e}"));
            }
        }
        match first_error {
            None => Ok(()),
            Some(message) => Err(StorageError::Refused { code: 1, message }),
        }
    }

    fn purge(&self) -> String {
        format!(
            "DELETE FROM {} WHERE at < NOW() - INTERVAL 7 DAY",
            self.table_sql
        )
    }

    /// The statement a group sends before its COMMIT: `writer` committed
    /// group `seq`.
    pub(super) fn push_mark(&self, sql: &mut Vec<u8>, writer: u64, seq: u64) {
        sql.extend_from_slice(
            format!(
                "INSERT INTO {} (writer, seq) VALUES ({writer}, {seq}) \
                 ON DUPLICATE KEY UPDATE seq = {seq}",
                self.table_sql
            )
            .as_bytes(),
        );
    }
}

/// What became of a group whose COMMIT went unanswered.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fate {
    Committed,
    RolledBack,
    /// The server could not be asked in time.
    Unknown(String),
}

/// Finds out whether group `seq` of `writer`, whose session was
/// `connection_id`, committed (see the module comment).
pub(super) async fn resolve(
    connector: &Connector,
    marker: &MarkerTable,
    connection_id: u64,
    writer: u64,
    seq: u64,
) -> Fate {
    let timeout = connector.settings.timeout;
    let deadline = Instant::now() + timeout * RESOLVE_TIMEOUTS;
    let mut last_error = String::from("not tried");
    while Instant::now() < deadline {
        match connector.open_link().await {
            Ok(mut link) => {
                let fate = ask(&mut link, marker, connection_id, writer, seq, deadline).await;
                link.quit().await;
                match fate {
                    Ok(fate) => return fate,
                    Err(e) => last_error = e.to_string(),
                }
            }
            Err(f) => last_error = f.error.to_string(),
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
    Fate::Unknown(last_error)
}

/// On a fresh connection: ends the old session, waits until it is gone,
/// reads the marker.
async fn ask(
    link: &mut Link,
    marker: &MarkerTable,
    connection_id: u64,
    writer: u64,
    seq: u64,
    deadline: Instant,
) -> Result<Fate, StorageError> {
    let kill = format!("KILL CONNECTION {connection_id}");
    if let Answer::Refused(e) = query(link, &kill, &mut Discard).await? {
        if e.code != ER_NO_SUCH_THREAD {
            return Err(StorageError::Refused {
                code: u32::from(e.code),
                message: format!("{kill}: {e}"),
            });
        }
    }
    let present =
        format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {connection_id}");
    loop {
        let mut count = FirstValue::default();
        if let Answer::Refused(e) = query(link, &present, &mut count).await? {
            return Err(StorageError::Refused {
                code: u32::from(e.code),
                message: format!("{present}: {e}"),
            });
        }
        if count.0.as_deref() == Some(b"0") {
            break;
        }
        if Instant::now() >= deadline {
            return Err(StorageError::Unavailable(format!(
                "session {connection_id} still ending"
            )));
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
    let read = format!(
        "SELECT seq FROM {} WHERE writer = {writer}",
        marker.table_sql
    );
    let mut found = FirstValue::default();
    if let Answer::Refused(e) = query(link, &read, &mut found).await? {
        return Err(StorageError::Refused {
            code: u32::from(e.code),
            message: format!("{read}: {e}"),
        });
    }
    let committed = found
        .0
        .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok())
        == Some(seq);
    Ok(if committed {
        Fate::Committed
    } else {
        Fate::RolledBack
    })
}

async fn query(
    link: &mut Link,
    sql: &str,
    sink: &mut impl super::link::ResultSink,
) -> Result<Answer, StorageError> {
    link.queue(|out| out.extend_from_slice(sql.as_bytes()));
    link.answer(sink).await.map_err(|f| f.error)
}
