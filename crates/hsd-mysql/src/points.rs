//! Grouped point lookups: many `=` lookups on one unique index as one
//! `SELECT ... WHERE k IN (...)` per chunk of keys.

use super::errors::refused_error;
use super::link::{Answer, Failure, Link, ResultSink};
use super::literal::push_key;
use super::scan::{key_kind, DIALECT};
use hsd_storage::scan_sql;
use hsd_storage::{ColumnKind, Scan};
use mysql_wire::literal::push_number;
use mysql_wire::TextRow;
use std::collections::HashMap;

/// Most distinct keys in one point-lookup statement.
pub(super) const POINTS_CHUNK: usize = 64;

/// Runs one group of point lookups (all of one opened index), filling each
/// member scan's buffer with the row it finds.
pub(super) async fn run_points(
    link: &mut Link,
    scans: &[Scan<'_>],
    members: &[usize],
    buffers: &mut [Vec<Vec<u8>>],
) -> Result<(), Failure> {
    let first = &scans[members[0]];
    // Distinct keys: byte-identical keys are one lookup.
    let mut slots: Vec<&[Option<&[u8]>]> = Vec::new();
    let mut slot_of: Vec<usize> = Vec::with_capacity(members.len());
    let mut seen: HashMap<&[Option<&[u8]>], usize> = HashMap::new();
    for &m in members {
        let keys = scans[m].keys.as_slice();
        let s = *seen.entry(keys).or_insert_with(|| {
            slots.push(keys);
            slots.len() - 1
        });
        slot_of.push(s);
    }
    let mut found: Vec<Option<Vec<u8>>> = vec![None; slots.len()];
    // Keys that can be equal without being byte-identical need the rounds.
    let may_share_rows =
        (0..first.keys.len()).any(|i| matches!(key_kind(first, i), ColumnKind::Text { .. }));
    let exact = exact_keys(first);
    let mut pending: Vec<usize> = (0..slots.len()).collect();
    while !pending.is_empty() {
        let chunks: Vec<&[usize]> = pending.chunks(POINTS_CHUNK).collect();
        for chunk in &chunks {
            link.queue(|sql| points_sql(sql, first, chunk.iter().map(|&s| slots[s])));
        }
        let mut missed = Vec::new();
        for chunk in &chunks {
            let by_key: Option<HashMap<&[Option<&[u8]>], usize>> = exact.then(|| {
                chunk
                    .iter()
                    .enumerate()
                    .map(|(n, &s)| (slots[s], n))
                    .collect()
            });
            let mut sink = PointsSink {
                chunk,
                by_key,
                nkeys: first.keys.len(),
                found: &mut found,
                hits: 0,
            };
            match link.answer(&mut sink).await? {
                Answer::Done(_) => {}
                Answer::Refused(e) => {
                    link.drain().await?;
                    return Err(Failure {
                        error: refused_error(&e),
                        link_lost: false,
                        retryable: false,
                    });
                }
            }
            if sink.hits > 0 && may_share_rows {
                missed.extend(chunk.iter().copied().filter(|&s| found[s].is_none()));
            }
        }
        pending = missed;
    }
    // Hand each row to every lookup of its key; the last one takes it.
    let mut refs = vec![0usize; slots.len()];
    for &s in &slot_of {
        refs[s] += 1;
    }
    for (&m, &s) in members.iter().zip(&slot_of) {
        refs[s] -= 1;
        let row = if refs[s] == 0 {
            found[s].take()
        } else {
            found[s].clone()
        };
        if let Some(row) = row {
            buffers[m].push(row);
        }
    }
    Ok(())
}

/// Whether every key column of the lookup's index compares byte for byte
/// (integers, binary strings): then a found row's own key names the lookup
/// it answers, and the statement selects the key columns instead of a CASE
/// over every key (which costs the server one comparison per key and row).
pub(super) fn exact_keys(scan: &Scan<'_>) -> bool {
    (0..scan.keys.len()).all(|i| {
        matches!(
            key_kind(scan, i),
            ColumnKind::Integer { .. } | ColumnKind::Bytes { .. }
        )
    }) && scan
        .index
        .index_meta()
        .key_prefix
        .iter()
        .all(Option::is_none)
}

/// How many columns lead a point lookup's rows: its key columns (see
/// `exact_keys`) or the CASE's lookup number.
pub(super) fn points_lead(scan: &Scan<'_>) -> usize {
    if exact_keys(scan) {
        scan.keys.len()
    } else {
        1
    }
}

/// How many locator columns follow a point lookup's opened columns: the
/// table's locator, for a lookup that reads rows to change them (such a
/// lookup finds at most one row, at the key it looked up: no position in
/// the index is needed to go on from).
pub(super) fn points_locator_len(scan: &Scan<'_>) -> usize {
    if scan.with_locator {
        scan.index.table.locator_sql.len()
    } else {
        0
    }
}

/// `SELECT (CASE WHEN k = v0 THEN 0 ... END), cols FROM t WHERE k IN (...)`,
/// with the locator columns and `FOR UPDATE` when the rows are to change.
pub(super) fn points_sql<'k>(
    sql: &mut Vec<u8>,
    scan: &Scan<'_>,
    keys: impl Iterator<Item = &'k [Option<&'k [u8]>]> + Clone,
) {
    let index = scan.index.index_meta();
    let table = &scan.index.table;
    let cond = |sql: &mut Vec<u8>, key: &[Option<&[u8]>]| {
        for (i, (col, v)) in index.key_sql.iter().zip(key).enumerate() {
            if i > 0 {
                sql.extend_from_slice(b" AND ");
            }
            sql.extend_from_slice(col.as_bytes());
            sql.extend_from_slice(b" = ");
            literal_for_key(sql, scan, i, *v);
        }
    };
    if exact_keys(scan) {
        sql.extend_from_slice(b"SELECT ");
        for (i, col) in index.key_sql.iter().enumerate() {
            if i > 0 {
                sql.extend_from_slice(b", ");
            }
            if matches!(key_kind(scan, i), ColumnKind::Integer { .. }) {
                // `+ 0`: a ZEROFILL column's text is padded.
                sql.push(b'(');
                sql.extend_from_slice(col.as_bytes());
                sql.extend_from_slice(b" + 0)");
            } else {
                sql.extend_from_slice(col.as_bytes());
            }
        }
    } else {
        sql.extend_from_slice(b"SELECT (CASE");
        for (n, key) in keys.clone().enumerate() {
            sql.extend_from_slice(b" WHEN ");
            cond(sql, key);
            sql.extend_from_slice(b" THEN ");
            push_number(sql, n as u64);
        }
        sql.extend_from_slice(b" END)");
    }
    for &c in &scan.index.columns {
        sql.extend_from_slice(b", ");
        sql.extend_from_slice(table.columns[c].select_sql.as_bytes());
    }
    if scan.with_locator {
        for (i, l) in table.locator_sql.iter().enumerate() {
            sql.extend_from_slice(b", ");
            scan_sql::push_locate_read(sql, l, table.locator_column(i));
        }
        for c in scan.index.exact_columns() {
            sql.extend_from_slice(b", ");
            scan_sql::push_exact(sql, &table.columns[c].name_sql);
        }
    }
    sql.extend_from_slice(b" FROM ");
    sql.extend_from_slice(index.from_sql.as_bytes());
    sql.extend_from_slice(b" WHERE ");
    if index.key_sql.len() == 1 {
        sql.extend_from_slice(index.key_sql[0].as_bytes());
        sql.extend_from_slice(b" IN (");
        for (n, key) in keys.enumerate() {
            if n > 0 {
                sql.extend_from_slice(b", ");
            }
            literal_for_key(sql, scan, 0, key[0]);
        }
        sql.push(b')');
    } else {
        for (n, key) in keys.enumerate() {
            if n > 0 {
                sql.extend_from_slice(b" OR ");
            }
            sql.push(b'(');
            cond(sql, key);
            sql.push(b')');
        }
    }
    if scan.with_locator {
        sql.extend_from_slice(DIALECT.lock_suffix.as_bytes());
    }
}

/// A canonical key as a literal: integers as numbers, the rest by kind.
fn literal_for_key(sql: &mut Vec<u8>, scan: &Scan<'_>, i: usize, v: Option<&[u8]>) {
    push_key(sql, key_kind(scan, i), v);
}

struct PointsSink<'a> {
    chunk: &'a [usize],
    /// With exact keys: the chunk's position of each key.
    by_key: Option<HashMap<&'a [Option<&'a [u8]>], usize>>,
    nkeys: usize,
    found: &'a mut [Option<Vec<u8>>],
    hits: usize,
}

impl ResultSink for PointsSink<'_> {
    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool {
        let n = match &self.by_key {
            Some(by_key) => {
                let key: Vec<Option<&[u8]>> =
                    (0..self.nkeys).map(|i| row.get(payload, i)).collect();
                by_key.get(key.as_slice()).copied()
            }
            None => row
                .get(payload, 0)
                .and_then(|v| std::str::from_utf8(v).ok())
                .and_then(|s| s.parse::<usize>().ok()),
        };
        if let Some(&slot) = n.and_then(|n| self.chunk.get(n)) {
            if self.found[slot].is_none() {
                self.found[slot] = Some(payload.to_vec());
                self.hits += 1;
            }
        }
        true
    }
}
