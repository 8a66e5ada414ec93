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
//! waits until the session is gone from the process list, and reads the
//! marker with a locking read, which waits while the group's transaction
//! still holds the marker row (its commit or rollback still under way): the
//! group's number there means committed, anything else rolled back. The
//! writes are answered accordingly. Only when the server stays unreachable
//! for `RESOLVE_TIMEOUTS` times `--mysql-timeout` are they answered with
//! `ERR_COMMIT_IN_DOUBT`: their outcome is unknown.

use super::connector::Connector;
use super::link::{Answer, Discard, FirstValue, Link, ServerRun};
use super::meta::{self, quote};
use hsd_storage::{ColumnKind, StorageError, TableMeta};
use std::time::{Duration, Instant};

/// How many times `--mysql-timeout` an in-doubt COMMIT may take to resolve
/// before it is answered as in doubt.
const RESOLVE_TIMEOUTS: u32 = 4;
/// Pause between tries while the server cannot be reached, and between
/// looks at the process list.
const RETRY_PAUSE: Duration = Duration::from_millis(100);

/// MySQL's "Unknown thread id": the session is gone already.
const ER_NO_SUCH_THREAD: u16 = 1094;
/// "You are not owner of thread": the id belongs to another account's
/// session (ids are reused after a restart).
const ER_KILL_DENIED: u16 = 1095;

/// Where write groups mark their commits: the table's names.
#[derive(Debug, Clone)]
pub(super) struct MarkerTable {
    db: String,
    table: String,
    pub(super) db_sql: String,
    pub(super) table_sql: String,
}

/// Why a marker table that exists cannot be trusted: its rows would not
/// say what became of a group (`marker_problem`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UntrustedMarker(pub(super) String);

/// What checking the marker table found.
#[derive(Debug)]
pub(super) enum MarkerCheck {
    Usable,
    /// It exists and is wrong: writes must not rely on it.
    Untrusted(UntrustedMarker),
    /// It could not be made or read (privileges, the link).
    Failed(StorageError),
}

impl MarkerTable {
    pub(super) fn new(db: &str, table: &str) -> MarkerTable {
        MarkerTable {
            db: db.to_string(),
            table: table.to_string(),
            db_sql: quote(db),
            table_sql: format!("{}.{}", quote(db), quote(table)),
        }
    }

    /// Creates the database and table if they are missing, then checks the
    /// table is one whose rows can be trusted (`marker_problem`); forgets
    /// the rows of writers not seen for a week (hsd processes long gone).
    pub(super) async fn ensure(&self, link: &mut Link) -> MarkerCheck {
        match self.create(link).await {
            Ok(()) => {}
            Err(e) => return MarkerCheck::Failed(e),
        }
        match self.verify(link).await {
            Ok(()) => {}
            Err(Ok(untrusted)) => return MarkerCheck::Untrusted(untrusted),
            Err(Err(e)) => return MarkerCheck::Failed(e),
        }
        // Best effort: an account may write the table but not delete.
        if let Err(e) = query(link, &self.purge(), &mut Discard).await {
            return MarkerCheck::Failed(e);
        }
        MarkerCheck::Usable
    }

    /// Reads the table's definition as the server has it now and checks
    /// it (`marker_problem`). `Err(Ok(_))`: it is not to be trusted.
    pub(super) async fn verify(
        &self,
        link: &mut Link,
    ) -> Result<(), Result<UntrustedMarker, StorageError>> {
        let table = meta::describe(link, &self.db, &self.table)
            .await
            .map_err(|f| match f.error {
                StorageError::OpenTable(why) => Ok(UntrustedMarker(why)),
                other => Err(other),
            })?;
        match marker_problem(&table) {
            None => Ok(()),
            Some(why) => Err(Ok(UntrustedMarker(format!("{}: {why}", self.table_sql)))),
        }
    }

    async fn create(&self, link: &mut Link) -> Result<(), StorageError> {
        let probe = format!("SELECT writer, seq FROM {} LIMIT 0", self.table_sql);
        if let Answer::Done(_) = query(link, &probe, &mut Discard).await? {
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

/// Why the marker table's rows could not say what became of a group, if
/// so: its writes must be undone by the group's rollback (a transactional
/// engine: a MyISAM mark would outlive the rollback the resolver's KILL
/// causes), `writer` must be its key (otherwise every group adds a row and
/// the resolver may read an old one) and both numbers must hold any u64.
pub(super) fn marker_problem(table: &TableMeta) -> Option<String> {
    if !table.transactional {
        return Some(
            "its engine has no transactions (a mark would outlive a rolled-back group); \
             it must be InnoDB"
                .into(),
        );
    }
    let column = |name: &str| table.columns.iter().position(|c| c.name == name);
    let primary = table.indexes.iter().find(|i| i.name == "PRIMARY");
    let writer = column("writer");
    if writer.is_none() || primary.map(|p| p.key_columns.as_slice()) != Some(&[writer][..]) {
        return Some("its PRIMARY KEY must be (writer) alone".into());
    }
    for name in ["writer", "seq"] {
        let wide = column(name).is_some_and(|i| {
            matches!(table.columns[i].kind, ColumnKind::Integer { max, .. }
                if max >= i128::from(u64::MAX))
        });
        if !wide {
            return Some(format!("column {name} must be BIGINT UNSIGNED"));
        }
    }
    if column("at").is_none() {
        return Some("column at (TIMESTAMP) is missing".into());
    }
    None
}

/// What became of a group whose COMMIT went unanswered.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Fate {
    Committed,
    RolledBack,
    /// The server could not be asked in time.
    Unknown(String),
    /// The marker table changed since it was checked and its rows cannot
    /// be trusted: the outcome is unknown.
    Untrusted(UntrustedMarker),
}

/// Finds out whether group `seq` of `writer`, whose session was
/// `connection_id`, committed (see the module comment).
pub(super) async fn resolve(
    connector: &Connector,
    marker: &MarkerTable,
    session: Session,
    writer: u64,
    seq: u64,
) -> Fate {
    let timeout = connector.settings.timeout;
    let deadline = Instant::now() + timeout * RESOLVE_TIMEOUTS;
    let mut last_error = String::from("not tried");
    while Instant::now() < deadline {
        match connector.open_link().await {
            Ok(mut link) => {
                let fate = ask(&mut link, marker, session, writer, seq, deadline).await;
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

/// The session whose COMMIT went unanswered: its id, on which server run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Session {
    pub(super) connection_id: u64,
    pub(super) run: ServerRun,
}

impl Session {
    /// Whether the server `link` reaches now may still hold the session:
    /// the same server and run (a restarted server reuses ids, so a KILL
    /// there would end someone else's session). Both must say so: the
    /// start times (known to the second, so a run shorter than two seconds
    /// passes for the next one) and the ids, which only grow within a run
    /// (a connection made after a restart has a smaller id than the old
    /// session's, unless as many connections came since).
    fn may_live_on(&self, now: &ServerRun, new_connection_id: u64) -> bool {
        let ids_grew = new_connection_id > self.connection_id;
        match self.run.changed(now) {
            Some(changed) => !changed && ids_grew,
            None => ids_grew,
        }
    }
}

/// On a fresh connection: ends the old session, waits until it is gone,
/// reads the marker. After a restart there is nothing to end: the server
/// settled every transaction in its recovery.
async fn ask(
    link: &mut Link,
    marker: &MarkerTable,
    session: Session,
    writer: u64,
    seq: u64,
    deadline: Instant,
) -> Result<Fate, StorageError> {
    if session.may_live_on(&link.server_run, link.connection_id) {
        end_session(link, session.connection_id, deadline).await?;
    } else {
        tracing::info!(
            "the server restarted since the unanswered COMMIT; its marker is read without ending any session"
        );
    }
    match marker.verify(link).await {
        Ok(()) => {}
        Err(Ok(untrusted)) => return Ok(Fate::Untrusted(untrusted)),
        Err(Err(e)) => return Err(e),
    }
    // A locking read: a group whose COMMIT the server is still carrying
    // out holds its marker row, and the read waits for the outcome. The
    // session leaving the process list was not enough: under load a plain
    // read here found no mark of a group that then turned out committed
    // (tests/mysql_stalls.rs in CI: 24 inserts answered 2013 and stored).
    let read = format!(
        "SELECT seq FROM {} WHERE writer = {writer} LOCK IN SHARE MODE",
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

/// `KILL CONNECTION` of the stalled session (a COMMIT the server had not
/// run is then rolled back), then waits until it is gone from the process
/// list: its transaction is settled for good. An account may end only its
/// own sessions: "not your thread" (1095) means the id is someone else's
/// now, so the session is gone already.
async fn end_session(
    link: &mut Link,
    connection_id: u64,
    deadline: Instant,
) -> Result<(), StorageError> {
    let kill = format!("KILL CONNECTION {connection_id}");
    if let Answer::Refused(e) = query(link, &kill, &mut Discard).await? {
        match e.code {
            ER_NO_SUCH_THREAD => {}
            ER_KILL_DENIED => return Ok(()),
            _ => {
                return Err(StorageError::Refused {
                    code: u32::from(e.code),
                    message: format!("{kill}: {e}"),
                })
            }
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
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(StorageError::Unavailable(format!(
                "session {connection_id} still ending"
            )));
        }
        tokio::time::sleep(RETRY_PAUSE).await;
    }
}

async fn query(
    link: &mut Link,
    sql: &str,
    sink: &mut impl super::link::ResultSink,
) -> Result<Answer, StorageError> {
    link.queue(|out| out.extend_from_slice(sql.as_bytes()));
    link.answer(sink).await.map_err(|f| f.error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsd_storage::memory::{table_meta, Col, Idx};

    /// The marker table as hsd makes it, then changed by `change`.
    fn marker(change: impl FnOnce(&mut TableMeta)) -> TableMeta {
        let col = |name| Col {
            name,
            integer: true,
            nullable: false,
        };
        let mut t = table_meta(
            "hsd",
            "commit_marker",
            &[col("writer"), col("seq"), col("at")],
            &[Idx {
                name: "PRIMARY",
                columns: &["writer"],
                unique: true,
            }],
            None,
        );
        for c in &mut t.columns[..2] {
            c.kind = ColumnKind::Integer {
                min: 0,
                max: i128::from(u64::MAX),
            };
        }
        change(&mut t);
        t
    }

    #[test]
    fn the_table_hsd_makes_is_trusted() {
        assert_eq!(marker(|_| {}), marker(|_| {}));
        assert_eq!(marker_problem(&marker(|_| {})), None);
    }

    #[test]
    fn a_table_without_transactions_is_not_trusted() {
        let why = marker_problem(&marker(|t| t.transactional = false));
        assert!(why.is_some_and(|w| w.contains("InnoDB")));
    }

    #[test]
    fn a_table_not_keyed_by_writer_alone_is_not_trusted() {
        let no_key = marker(|t| t.indexes.clear());
        let other_key = marker(|t| t.indexes[0].key_columns = vec![Some(1)]);
        let wider_key = marker(|t| t.indexes[0].key_columns = vec![Some(0), Some(1)]);
        let unique_only = marker(|t| t.indexes[0].name = "u_writer".into());
        for t in [no_key, other_key, wider_key, unique_only] {
            let why = marker_problem(&t);
            assert!(
                why.as_deref().is_some_and(|w| w.contains("PRIMARY KEY")),
                "{why:?}"
            );
        }
    }

    #[test]
    fn numbers_that_cannot_hold_every_id_are_not_trusted() {
        for i in 0..2 {
            let t = marker(|t| {
                t.columns[i].kind = ColumnKind::Integer {
                    min: i128::from(i64::MIN),
                    max: i128::from(i64::MAX),
                }
            });
            assert!(marker_problem(&t).is_some_and(|w| w.contains("BIGINT UNSIGNED")));
        }
        let text = marker(|t| {
            t.columns[1].kind = ColumnKind::Text {
                charset: "utf8mb4".into(),
                max_chars: 20,
            }
        });
        assert!(marker_problem(&text).is_some());
        let no_at = marker(|t| t.columns[2].name = "when".into());
        assert!(marker_problem(&no_at).is_some_and(|w| w.contains("at")));
    }

    fn link_run(server_id: Option<u64>, started_at: Option<u64>) -> ServerRun {
        ServerRun {
            server_id,
            started_at,
        }
    }

    #[test]
    fn a_restart_or_another_server_is_told_apart() {
        let before = link_run(Some(1), Some(1_000));
        // The same run, its start computed a second apart.
        assert_eq!(before.changed(&link_run(Some(1), Some(1_001))), Some(false));
        assert_eq!(before.changed(&link_run(Some(1), Some(1_040))), Some(true));
        assert_eq!(before.changed(&link_run(Some(2), Some(1_000))), Some(true));
        assert_eq!(before.changed(&link_run(Some(2), None)), Some(true));
        assert_eq!(before.changed(&link_run(Some(1), None)), None);
    }

    #[test]
    fn a_session_is_ended_only_on_the_run_that_holds_it() {
        let session = Session {
            connection_id: 9,
            run: link_run(Some(1), Some(1_000)),
        };
        assert!(session.may_live_on(&link_run(Some(1), Some(1_000)), 12));
        // A start time that reads the same, and an id that did not grow: a
        // run that lasted under two seconds, restarted; 5 is someone else's.
        assert!(!session.may_live_on(&link_run(Some(1), Some(1_001)), 5));
        // Restarted: ids count from 1 again, and 12 is someone else's.
        assert!(!session.may_live_on(&link_run(Some(1), Some(5_000)), 12));
        assert!(!session.may_live_on(&link_run(Some(3), Some(1_000)), 12));
        // The start unknown: only ids that grew say "the same run".
        let unknown = Session {
            connection_id: 9,
            run: link_run(Some(1), None),
        };
        assert!(unknown.may_live_on(&link_run(Some(1), None), 12));
        assert!(!unknown.may_live_on(&link_run(Some(1), None), 3));
    }
}
