//! Reads for the row cache's fills (`StorageConn::read_for_cache`): each
//! lookup as its own `SELECT ... LOCK IN SHARE MODE NOWAIT` (MySQL 8:
//! `FOR SHARE NOWAIT`), in autocommit, pipelined.
//!
//! Why a locking read: the server sends a transaction's binlog events
//! before its engine commit makes the change visible, so the row cache can
//! evict a key before the change can be read. A writer holds its row locks
//! (explicit, or an insert's implicit lock) until that commit, and a
//! locking read reads the newest committed version: a locking read that
//! got its lock read a row no uncommitted write touches. `NOWAIT`: a row
//! a writer holds is not waited for (a read must never block on a writer,
//! nor take part in a deadlock); it answers `None`, read plainly by the
//! caller and not stored. The whole argument is in docs/mysql.md, "The row
//! cache".

use super::errors::{codes, refused_error};
use super::link::{Answer, Failure, Link, ResultSink};
use super::scan::{Literals, DIALECT};
use crate::backend::scan_sql;
use crate::backend::{CacheRead, OwnedRow, Scan};
use mysql_wire::TextRow;

/// The share lock that fails at once where a writer holds the row.
fn share_nowait(mariadb: bool) -> &'static [u8] {
    if mariadb {
        b" LOCK IN SHARE MODE NOWAIT"
    } else {
        b" FOR SHARE NOWAIT"
    }
}

/// Whether the server refused a locking read because a lock is held
/// (MariaDB's NOWAIT answers a lock wait timeout, of a row, table or
/// metadata lock; MySQL's its own code).
fn met_a_lock(code: u16) -> bool {
    matches!(
        code,
        codes::ER_LOCK_WAIT_TIMEOUT | codes::ER_LOCK_NOWAIT | codes::ER_LOCK_DEADLOCK
    )
}

/// Runs one locking read per scan (a lookup by a whole unique key, every
/// column opened); one that met a lock is `None`. Another refusal (a
/// statement timeout, a table gone) is the answer, as it would be for
/// the plain read: it is not run twice.
pub(super) async fn read_locked(
    link: &mut Link,
    scans: &[Scan<'_>],
) -> Result<Vec<CacheRead>, Failure> {
    let suffix = share_nowait(link.server.mariadb);
    for scan in scans {
        link.queue(|sql| {
            scan_sql::build(scan, DIALECT, &mut Literals { scan }, sql);
            sql.extend_from_slice(suffix);
        });
    }
    link.send().await?;
    let mut read = Vec::with_capacity(scans.len());
    let mut first_error = None;
    for scan in scans {
        let mut sink = Rows {
            columns: scan.index.columns.len(),
            rows: Vec::new(),
        };
        read.push(match link.answer(&mut sink).await? {
            Answer::Done(_) => Some(sink.rows),
            Answer::Refused(e) => {
                if !met_a_lock(e.code) {
                    first_error.get_or_insert(refused_error(&e));
                }
                None
            }
        });
    }
    match first_error {
        None => Ok(read),
        Some(error) => Err(Failure {
            error,
            link_lost: false,
            retryable: false,
        }),
    }
}

/// Keeps every row whole.
struct Rows {
    columns: usize,
    rows: Vec<OwnedRow>,
}

impl ResultSink for Rows {
    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool {
        self.rows.push(
            (0..self.columns)
                .map(|c| row.get(payload, c).map(Box::from))
                .collect(),
        );
        true
    }
}
