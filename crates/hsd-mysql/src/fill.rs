//! Reads for the row cache's fills (`StorageConn::read_for_cache`): the
//! lookups as `SELECT ... WHERE k IN (...) LOCK IN SHARE MODE NOWAIT`
//! (MySQL 8: `FOR SHARE NOWAIT`), grouped by index as the plain reads are,
//! in autocommit, pipelined.
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
use super::points::{exact_keys, points_sql, POINTS_CHUNK};
use super::scan::{Literals, DIALECT};
use hsd_storage::scan_sql;
use hsd_storage::{CacheRead, OwnedRow, Scan};
use mysql_wire::{Flavor, TextRow};
use std::collections::HashMap;

/// The share lock that fails at once where a writer holds the row.
fn share_nowait(flavor: Flavor) -> &'static [u8] {
    if flavor.is_mariadb() {
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

/// Runs the locking reads (each scan a lookup by a whole unique key, every
/// column opened): lookups of one index whose keys compare byte for byte
/// as one `SELECT ... WHERE k IN (...)` per chunk (`points`), any other
/// alone. A statement that met a lock answers `None` for each of its
/// lookups. Another refusal (a statement timeout, a table gone) is the
/// answer, as it would be for the plain read: it is not run twice.
pub(super) async fn read_locked(
    link: &mut Link,
    scans: &[Scan<'_>],
) -> Result<Vec<CacheRead>, Failure> {
    let suffix = share_nowait(link.server.flavor);
    let mut statements: Vec<Vec<usize>> = Vec::new();
    let mut open_chunk: HashMap<u64, usize> = HashMap::new();
    for (i, scan) in scans.iter().enumerate() {
        if !exact_keys(scan) {
            statements.push(vec![i]);
            continue;
        }
        match open_chunk.get(&scan.index.id) {
            Some(&s) if statements[s].len() < POINTS_CHUNK => statements[s].push(i),
            _ => {
                open_chunk.insert(scan.index.id, statements.len());
                statements.push(vec![i]);
            }
        }
    }
    for members in &statements {
        let first = &scans[members[0]];
        link.queue(|sql| {
            if exact_keys(first) {
                points_sql(
                    sql,
                    first,
                    members.iter().map(|&m| scans[m].keys.as_slice()),
                );
            } else {
                // The row cache is refused on Vitess.
                let mut literals = Literals {
                    scan: first,
                    vitess: false,
                };
                scan_sql::build(first, DIALECT, &mut literals, sql);
            }
            sql.extend_from_slice(suffix);
        });
    }
    link.send().await?;
    let mut read: Vec<CacheRead> = vec![None; scans.len()];
    let mut first_error = None;
    for members in &statements {
        let first = &scans[members[0]];
        let mut sink = Rows {
            lead: if exact_keys(first) {
                first.keys.len()
            } else {
                0
            },
            columns: first.index.columns.len(),
            rows: Vec::new(),
        };
        match link.answer(&mut sink).await? {
            Answer::Done(_) if sink.lead == 0 => read[members[0]] = Some(sink.into_rows()),
            Answer::Done(_) => {
                // Each row to the lookups of its key (its own key
                // columns, which compare byte for byte).
                for &m in members {
                    let rows = sink
                        .rows
                        .iter()
                        .filter(|(key, _)| key_is(key, &scans[m].keys))
                        .map(|(_, row)| row.clone())
                        .collect();
                    read[m] = Some(rows);
                }
            }
            Answer::Refused(e) => {
                if !met_a_lock(e.code) {
                    first_error.get_or_insert(refused_error(&e));
                }
            }
        }
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

fn key_is(found: &[Option<Box<[u8]>>], asked: &[Option<&[u8]>]) -> bool {
    found.len() == asked.len() && found.iter().zip(asked).all(|(f, a)| f.as_deref() == *a)
}

/// Keeps every row whole, after its `lead` key columns.
struct Rows {
    lead: usize,
    columns: usize,
    rows: Vec<(OwnedRow, OwnedRow)>,
}

impl Rows {
    fn into_rows(self) -> Vec<OwnedRow> {
        self.rows.into_iter().map(|(_, row)| row).collect()
    }
}

impl ResultSink for Rows {
    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool {
        let value = |c: usize| row.get(payload, c).map(Box::from);
        let key = (0..self.lead).map(value).collect();
        let values = (self.lead..self.lead + self.columns).map(value).collect();
        self.rows.push((key, values));
        true
    }
}
