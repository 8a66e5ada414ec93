//! `scan_many` for MySQL/MariaDB: every scan of a batch (all finds that
//! the event loop's client connections queued together) planned into few
//! statements, sent together, answers read in order.
//!
//! - Point lookups (`=` on every column of a unique index, no NULL key, no
//!   filter) whose keys are written exactly as the server stores them
//!   (`canonical`), two or more of one opened index: one `SELECT (CASE WHEN
//!   k = v0 THEN 0 WHEN k = v1 THEN 1 ... END), cols ... WHERE k IN (...)`
//!   per chunk of up to `POINTS_CHUNK` distinct keys. The server compares;
//!   the CASE tells which lookup a row answers (for keys that compare byte
//!   for byte, integers and binary strings, the row's own key does, and the
//!   statement selects it instead: `exact_keys`). Under a case-insensitive
//!   collation two different keys can find one row, and CASE names only the
//!   first: lookups that missed in a statement that found something are
//!   asked again, until a round finds nothing.
//! - Scans the `HANDLER` statement can do (no filter, not inside a write):
//!   `HANDLER h READ idx op (keys) LIMIT n`, with the plugin's own key
//!   handling (see `handler`).
//! - The rest: the shared SELECT of `scan_sql`, with values as literals.
//!
//! Rows of grouped lookups are buffered per scan and handed to `visit` in
//! scan order; the other answers stream straight to `visit`.

use super::handler::{push_index_name, Handles, Housekeeping};
use super::link::{Answer, Failure, Link, ResultSink};
use super::refused_error;
use crate::backend::scan_sql::{self, Dialect, Param, ScanLayout, ValueSink};
use crate::backend::values::{date_check, stored_enum, stored_year, DateCheck};
use crate::backend::{
    ColumnKind, FilterMode, FilterVerdict, RowView, RowVisitor, Scan, ScanStep, TableMeta,
};
use hs_proto::{FindOp, Value};
use mysql_wire::literal::{push_binary, push_number};
use mysql_wire::TextRow;
use std::collections::HashMap;

pub const DIALECT: Dialect = Dialect {
    lock_suffix: " FOR UPDATE",
};

/// "Unknown table in HANDLER": the alias is not open on the server.
const ER_UNKNOWN_TABLE: u16 = 1109;
/// "Unknown column": what a client sees when an opened column was dropped.
const ER_BAD_FIELD_ERROR: u32 = 1054;

/// Most distinct keys in one point-lookup statement.
pub const POINTS_CHUNK: usize = 64;

/// Appends `value` as a literal in the column's own character set (text) or
/// as bytes (everything else).
pub fn push_literal(sql: &mut Vec<u8>, kind: &ColumnKind, value: Option<&[u8]>) {
    let Some(v) = value else {
        sql.extend_from_slice(b"NULL");
        return;
    };
    match kind {
        ColumnKind::Text { charset, .. } => push_text(sql, charset, v),
        ColumnKind::Other { cast: None, .. } => push_text(sql, "utf8mb4", v),
        _ => push_binary(sql, Some(v)),
    }
}

/// `_<charset>'...'`, or a conversion when the bytes are not text in it.
fn push_text(sql: &mut Vec<u8>, charset: &str, v: &[u8]) {
    if charset.starts_with("utf8") && std::str::from_utf8(v).is_err() {
        // Not text in that charset: convert as the server would.
        sql.extend_from_slice(b"CONVERT(");
        push_binary(sql, Some(v));
        sql.extend_from_slice(b" USING ");
        sql.extend_from_slice(charset.as_bytes());
        sql.push(b')');
        return;
    }
    let at = sql.len();
    push_binary(sql, Some(v));
    // `_binary'...'` becomes `_<charset>'...'`.
    sql.splice(at + 1..at + 7, charset.bytes());
}

/// A temporal value as the column stores it: `CAST(v AS t)`, or the
/// type's zero value (as plain text) where storing fails (no date in it, an
/// invalid date); a TIMESTAMP also turns zero outside its range. Validity is
/// decided here, not by the server: compared with an indexed column, the
/// range optimizer evaluates such a CAST (and anything testing it) with
/// invalid and zero dates allowed.
fn push_temporal(sql: &mut Vec<u8>, cast: &str, zero: &str, timestamp: bool, v: &[u8]) {
    let cast_value = |sql: &mut Vec<u8>| {
        sql.extend_from_slice(b"CAST(");
        push_binary(sql, Some(v));
        sql.extend_from_slice(b" AS ");
        sql.extend_from_slice(cast.as_bytes());
        sql.push(b')');
    };
    let zero_text = |sql: &mut Vec<u8>| push_text(sql, "latin1", zero.as_bytes());
    let invalid = if cast.starts_with("DATE") {
        match date_check(v, cast.starts_with("DATETIME")) {
            DateCheck::Invalid => true,
            // A CAST of a zero date misleads the range optimizer (`<` then
            // finds the zero rows); the text itself, stored into the column
            // there, is what the original stored.
            DateCheck::ZeroInDate if !timestamp => return push_text(sql, "latin1", v),
            _ => false,
        }
    } else {
        // TIME: the server reads any leading number; nothing else stores.
        let t = v.trim_ascii_start();
        !t.strip_prefix(b"-")
            .unwrap_or(t)
            .first()
            .is_some_and(u8::is_ascii_digit)
    };
    if invalid {
        return zero_text(sql);
    }
    if timestamp {
        sql.extend_from_slice(b"(CASE WHEN UNIX_TIMESTAMP(");
        cast_value(sql);
        sql.extend_from_slice(b") BETWEEN 1 AND 2147483647.999999 THEN ");
        cast_value(sql);
        sql.extend_from_slice(b" ELSE ");
        zero_text(sql);
        sql.extend_from_slice(b" END)");
    } else {
        cast_value(sql);
    }
}

/// Appends `value` as what storing it into a column of `kind` makes of it,
/// the way the original compared filter values: integers rounded and
/// clamped to the type, text cut to the column's length, BINARY padded,
/// decimals and dates converted. (Comparing a column with a literal of
/// another type does not do that, and `HANDLER ... WHERE` even compares an
/// INT column with a binary string wrongly.)
pub fn push_stored(sql: &mut Vec<u8>, kind: &ColumnKind, value: Option<&[u8]>) {
    let Some(v) = value else {
        sql.extend_from_slice(b"NULL");
        return;
    };
    match kind {
        ColumnKind::Integer { min, max } => {
            if canonical(kind, v) {
                sql.extend_from_slice(v);
                return;
            }
            sql.extend_from_slice(b"LEAST(GREATEST(CAST(");
            push_binary(sql, Some(v));
            sql.extend_from_slice(format!(" AS DECIMAL(65,0)), {min}), {max})").as_bytes());
        }
        ColumnKind::Text { charset, max_chars } => {
            if canonical(kind, v) {
                push_text(sql, charset, v);
                return;
            }
            sql.extend_from_slice(b"LEFT(");
            push_text(sql, charset, v);
            sql.extend_from_slice(format!(", {max_chars})").as_bytes());
        }
        ColumnKind::Bytes { max_len, fixed } => {
            if canonical(kind, v) {
                push_binary(sql, Some(v));
            } else if *fixed {
                sql.extend_from_slice(b"CAST(");
                push_binary(sql, Some(v));
                sql.extend_from_slice(format!(" AS BINARY({max_len}))").as_bytes());
            } else {
                sql.extend_from_slice(b"LEFT(");
                push_binary(sql, Some(v));
                sql.extend_from_slice(format!(", {max_len})").as_bytes());
            }
        }
        ColumnKind::Temporal {
            cast,
            zero,
            timestamp,
        } => push_temporal(sql, cast, zero, *timestamp, v),
        ColumnKind::Year => push_number_i64(sql, stored_year(v)),
        ColumnKind::Enum {
            elements,
            case_insensitive,
        } => push_number_i64(sql, stored_enum(v, elements, *case_insensitive)),
        ColumnKind::Other {
            cast: Some(t),
            unsigned,
        } => {
            if *unsigned {
                sql.extend_from_slice(b"GREATEST(");
            }
            sql.extend_from_slice(b"CAST(");
            push_binary(sql, Some(v));
            sql.extend_from_slice(b" AS ");
            sql.extend_from_slice(t.as_bytes());
            sql.push(b')');
            if *unsigned {
                sql.extend_from_slice(b", 0)");
            }
        }
        ColumnKind::Other { cast: None, .. } => push_text(sql, "utf8mb4", v),
    }
}

/// Whether `key` is written exactly as the server would store it in a
/// column of `kind`, so that comparing it in SQL finds what storing it
/// first (as the plugin and `HANDLER` do) finds.
pub fn canonical(kind: &ColumnKind, key: &[u8]) -> bool {
    match kind {
        ColumnKind::Integer { min, max } => {
            let digits = key.strip_prefix(b"-").unwrap_or(key);
            if digits.is_empty()
                || digits.len() > 20
                || !digits.iter().all(u8::is_ascii_digit)
                || (digits.len() > 1 && digits[0] == b'0')
                || key == b"-0"
            {
                return false;
            }
            std::str::from_utf8(key)
                .ok()
                .and_then(|s| s.parse::<i128>().ok())
                .is_some_and(|n| n >= *min && n <= *max)
        }
        ColumnKind::Text { charset, max_chars } => {
            let chars = if charset.starts_with("utf8") {
                match std::str::from_utf8(key) {
                    Ok(s) => s.chars().count() as u64,
                    Err(_) => return false,
                }
            } else if charset == "latin1" || charset == "ascii" {
                key.len() as u64
            } else {
                return false;
            };
            chars <= *max_chars
        }
        ColumnKind::Bytes { max_len, fixed } => {
            let n = key.len() as u64;
            if *fixed {
                n == *max_len
            } else {
                n <= *max_len
            }
        }
        ColumnKind::Temporal { .. }
        | ColumnKind::Year
        | ColumnKind::Enum { .. }
        | ColumnKind::Other { .. } => false,
    }
}

fn push_number_i64(sql: &mut Vec<u8>, n: i64) {
    sql.extend_from_slice(n.to_string().as_bytes());
}

/// Writes a scan's values as literals for the shared SELECT.
struct Literals<'a, 's> {
    scan: &'a Scan<'s>,
}

impl ValueSink for Literals<'_, '_> {
    fn value(&mut self, sql: &mut Vec<u8>, param: Param) {
        let table = &self.scan.index.table;
        match param {
            Param::Key(i) => {
                let kind = key_kind(self.scan, i);
                let prefix = self
                    .scan
                    .index
                    .index_meta()
                    .key_prefix
                    .get(i)
                    .copied()
                    .flatten();
                match (prefix, self.scan.keys[i]) {
                    (Some(n), Some(_)) => {
                        sql.extend_from_slice(b"LEFT(");
                        push_stored(sql, kind, self.scan.keys[i]);
                        sql.extend_from_slice(format!(", {n})").as_bytes());
                    }
                    _ => push_stored(sql, kind, self.scan.keys[i]),
                }
            }
            Param::Filter(i) => {
                let f = &self.scan.filters[i];
                push_stored(sql, &table.columns[f.column].kind, f.value.as_deref());
            }
            Param::After(i) => {
                // Position values come from the position columns themselves
                // (a prefix part already selected as its prefix).
                let (_, cols) = scan_sql::position_columns(self.scan.index.index_meta());
                let kind = cols
                    .get(i)
                    .copied()
                    .flatten()
                    .map_or(&TEXT_KIND, |c| &table.columns[c].kind);
                let v = self
                    .scan
                    .after
                    .and_then(|a| a.get(i))
                    .and_then(|v| v.as_deref());
                push_stored(sql, kind, v);
            }
            Param::Limit => push_number(sql, self.scan.fetch),
        }
    }
}

/// A column compared as text (no CAST).
pub static TEXT_KIND: ColumnKind = ColumnKind::Other {
    cast: None,
    unsigned: false,
};

fn key_kind<'a>(scan: &'a Scan<'_>, i: usize) -> &'a ColumnKind {
    scan.index
        .index_meta()
        .key_columns
        .get(i)
        .copied()
        .flatten()
        .map_or(&TEXT_KIND, |c| &scan.index.table.columns[c].kind)
}

fn is_point_lookup(scan: &Scan<'_>) -> bool {
    let index = scan.index.index_meta();
    scan.op == FindOp::Eq
        && index.unique
        && !index.key_sql.is_empty()
        && scan.keys.len() == index.key_sql.len()
        && scan.filter_mode == FilterMode::None
        && scan.after.is_none()
        && scan
            .keys
            .iter()
            .enumerate()
            .all(|(i, k)| k.is_some_and(|k| canonical(key_kind(scan, i), k)))
}

/// Scans without filters: a `HANDLER ... WHERE` condition is fixed on the
/// table as it was when the statement started, and a handle the server
/// reopens under it (the table was dropped and made again) evaluates the
/// condition against the old table, letting every row through.
fn handler_can_read(scan: &Scan<'_>) -> bool {
    scan.index.index_meta().ordered
        && !scan.with_locator
        && scan.after.is_none()
        && scan.filter_mode == FilterMode::None
        && !scan.keys.is_empty()
}

/// What a queued statement answers.
enum Pending {
    /// HANDLER OPEN/CLOSE of the next scan's handle: no rows.
    Handle(Housekeeping),
    /// A scan's own statement.
    Scan,
}

/// Where a scan's rows come from.
enum Route {
    Points(usize),
    Handler,
    Select,
}

/// Runs the scans; `progressed` is set once any row was handed to `visit`
/// (after which a failure may not be retried).
pub async fn scan_many(
    link: &mut Link,
    handles: &mut Handles,
    scans: &[Scan<'_>],
    visit: &mut RowVisitor<'_>,
    progressed: &mut bool,
) -> Result<(), Failure> {
    // Plan: group point lookups by opened index.
    let mut routes = Vec::with_capacity(scans.len());
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: HashMap<(u64, bool), usize> = HashMap::new();
    for (i, scan) in scans.iter().enumerate() {
        if scans.len() > 1 && is_point_lookup(scan) {
            let key = (scan.index.id, scan.with_locator);
            let g = *group_of.entry(key).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(i);
            routes.push(Route::Points(g));
        } else if handler_can_read(scan) {
            routes.push(Route::Handler);
        } else {
            routes.push(Route::Select);
        }
    }
    // A group of one is cheaper through HANDLER (or, for a read that
    // locks, its own SELECT).
    for (r, scan) in routes.iter_mut().zip(scans) {
        if let Route::Points(g) = *r {
            if groups[g].len() < 2 {
                *r = if scan.with_locator {
                    Route::Select
                } else {
                    Route::Handler
                };
            }
        }
    }

    let mut buffers: Vec<Vec<Vec<u8>>> = Vec::new();
    if routes.iter().any(|r| matches!(r, Route::Points(_))) {
        buffers.resize_with(scans.len(), Vec::new);
        for members in groups.iter().filter(|m| m.len() >= 2) {
            run_points(link, scans, members, &mut buffers).await?;
        }
    }

    // Every other scan's statement, in scan order, then the answers.
    let mut pending: Vec<Pending> = Vec::new();
    for (scan, route) in scans.iter().zip(&routes) {
        match route {
            Route::Points(_) => {}
            Route::Handler => {
                let mut housekeeping = Vec::new();
                let alias = handles.alias_for(link, &scan.index.table, &mut housekeeping);
                pending.extend(housekeeping.into_iter().map(Pending::Handle));
                link.queue(|sql| handler_read(sql, &alias, scan));
                pending.push(Pending::Scan);
            }
            Route::Select => {
                link.queue(|sql| {
                    scan_sql::build(scan, DIALECT, &mut Literals { scan }, sql);
                });
                pending.push(Pending::Scan);
            }
        }
    }
    link.send().await?;

    let mut first_error = None;
    let mut next = pending.into_iter().peekable();
    for (i, (scan, route)) in scans.iter().zip(&routes).enumerate() {
        if let Route::Points(_) = route {
            let ncols = scan.index.columns.len();
            let locator_len = points_locator_len(scan);
            let exact_len = if scan.with_locator {
                scan.index.exact_columns().count()
            } else {
                0
            };
            let lead = points_lead(scan);
            let mut row = TextRow::default();
            for payload in std::mem::take(&mut buffers[i]) {
                *progressed = true;
                row.parse(&payload, lead + ncols + locator_len + exact_len)
                    .map_err(|e| Failure {
                        error: crate::backend::StorageError::Unavailable(e),
                        link_lost: false,
                        retryable: false,
                    })?;
                let view = TextRowView {
                    payload: &payload,
                    row: &row,
                    columns: Columns::Offset(lead),
                    ncols,
                    layout: ScanLayout {
                        has_state: false,
                        locator_len,
                        exact_len,
                    },
                };
                if visit(i, &view) == ScanStep::Stop {
                    break;
                }
            }
            continue;
        }
        // Housekeeping answers queued ahead of this scan's statement.
        while let Some(&Pending::Handle(kind)) = next.peek() {
            next.next();
            if let Answer::Refused(e) = link.answer(&mut super::link::Discard).await? {
                // An OPEN that failed left nothing open; a CLOSE that failed
                // closed nothing that is still there.
                if kind == Housekeeping::Open {
                    handles.forget(&scan.index.table);
                    first_error.get_or_insert(refused_error(&e));
                }
            }
        }
        next.next();
        let layout = match route {
            Route::Select => ScanLayout::of(scan),
            _ => ScanLayout {
                has_state: false,
                locator_len: 0,
                exact_len: 0,
            },
        };
        let mut sink = ScanSink {
            scan_no: i,
            table: &scan.index.table,
            opened: &scan.index.columns,
            handler: matches!(route, Route::Handler),
            remap: None,
            layout,
            visit: &mut *visit,
            progressed: &mut *progressed,
        };
        let answer = link.answer(&mut sink).await?;
        if sink.lost_a_column() {
            first_error.get_or_insert(crate::backend::StorageError::Refused {
                code: ER_BAD_FIELD_ERROR,
                message: format!(
                    "an opened column of {} is gone; open the index again",
                    scan.index.table.table_sql
                ),
            });
        }
        match answer {
            Answer::Done(_) => {}
            Answer::Refused(e) => {
                // The server has no such handle (it was never opened, or
                // closed with the connection's state): open it next time.
                if matches!(route, Route::Handler) && e.code == ER_UNKNOWN_TABLE {
                    handles.forget(&scan.index.table);
                }
                first_error.get_or_insert(refused_error(&e));
            }
        }
    }
    match first_error {
        None => Ok(()),
        Some(error) => Err(Failure {
            error,
            link_lost: false,
            retryable: false,
        }),
    }
}

/// `HANDLER alias READ idx op (k1, ...) LIMIT n`
fn handler_read(sql: &mut Vec<u8>, alias: &[u8], scan: &Scan<'_>) {
    sql.extend_from_slice(b"HANDLER ");
    sql.extend_from_slice(alias);
    sql.extend_from_slice(b" READ ");
    push_index_name(sql, &scan.index.index_meta().name);
    sql.extend_from_slice(match scan.op {
        FindOp::Eq => b" = (",
        FindOp::Gt => b" > (",
        FindOp::Ge => b" >= (",
        FindOp::Lt => b" < (",
        FindOp::Le => b" <= (",
    });
    for (i, k) in scan.keys.iter().enumerate() {
        if i > 0 {
            sql.extend_from_slice(b", ");
        }
        // Bytes, stored into the key column as the plugin stored them.
        push_binary(sql, *k);
    }
    sql.push(b')');
    sql.extend_from_slice(b" LIMIT ");
    push_number(sql, scan.fetch);
}

/// Runs one group of point lookups (all of one opened index), filling each
/// member scan's buffer with the row it finds.
async fn run_points(
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
fn exact_keys(scan: &Scan<'_>) -> bool {
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
fn points_lead(scan: &Scan<'_>) -> usize {
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
fn points_locator_len(scan: &Scan<'_>) -> usize {
    if scan.with_locator {
        scan.index.table.locator_sql.len()
    } else {
        0
    }
}

/// `SELECT (CASE WHEN k = v0 THEN 0 ... END), cols FROM t WHERE k IN (...)`,
/// with the locator columns and `FOR UPDATE` when the rows are to change.
fn points_sql<'k>(
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
        for l in &table.locator_sql {
            sql.extend_from_slice(b", ");
            sql.extend_from_slice(l.as_bytes());
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

/// A canonical key value (see `canonical`) of a column of `kind` as a
/// literal: integers as numbers, the rest by kind.
pub fn push_key(sql: &mut Vec<u8>, kind: &ColumnKind, v: Option<&[u8]>) {
    match (kind, v) {
        (ColumnKind::Integer { .. }, Some(digits)) => sql.extend_from_slice(digits),
        _ => push_literal(sql, kind, v),
    }
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

/// Where the opened columns are in a result row.
#[derive(Clone, Copy)]
enum Columns<'a> {
    /// Opened column `i` is at `base + i` (our own SELECTs).
    Offset(usize),
    /// A HANDLER row has every table column: opened column `i` is table
    /// column `opened[i]`, at that position unless the table changed since
    /// it was opened (`remap`, by name).
    Table {
        opened: &'a [usize],
        remap: Option<&'a [Option<usize>]>,
    },
}

struct TextRowView<'a> {
    payload: &'a [u8],
    row: &'a TextRow,
    columns: Columns<'a>,
    ncols: usize,
    layout: ScanLayout,
}

impl RowView for TextRowView<'_> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        let pos = match self.columns {
            Columns::Offset(base) => base + i,
            Columns::Table { opened, remap } => {
                let c = opened[i];
                match remap {
                    None => c,
                    Some(map) => map.get(c).copied().flatten()?,
                }
            }
        };
        self.row.get(self.payload, pos)
    }

    fn filter_state(&self) -> FilterVerdict {
        if !self.layout.has_state {
            return FilterVerdict::Pass;
        }
        let n = self
            .row
            .get(self.payload, self.ncols)
            .and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        FilterVerdict::from_state(n)
    }

    fn locator(&self) -> Vec<Value> {
        let start = self.after_opened();
        (start..start + self.layout.locator_len)
            .map(|i| self.row.get(self.payload, i).map(<[u8]>::to_vec))
            .collect()
    }

    fn exact(&self, k: usize) -> Option<&[u8]> {
        if k >= self.layout.exact_len {
            return None;
        }
        self.row.get(
            self.payload,
            self.after_opened() + self.layout.locator_len + k,
        )
    }
}

impl TextRowView<'_> {
    /// Where the columns after the opened ones (and the filter state)
    /// start: the locator, then the exact values.
    fn after_opened(&self) -> usize {
        let base = match self.columns {
            Columns::Offset(base) => base,
            Columns::Table { .. } => 0,
        };
        base + self.ncols + usize::from(self.layout.has_state)
    }
}

impl ScanSink<'_, '_, '_> {
    /// A HANDLER result without one of the opened columns (it was dropped
    /// since the index was opened).
    fn lost_a_column(&self) -> bool {
        match &self.remap {
            Some(map) => self
                .opened
                .iter()
                .any(|&c| map.get(c).copied().flatten().is_none()),
            None => false,
        }
    }
}

/// Streams one scan's answer to the executor.
struct ScanSink<'a, 'v, 'p> {
    scan_no: usize,
    table: &'a TableMeta,
    opened: &'a [usize],
    handler: bool,
    /// For HANDLER rows of a table whose columns moved since it was opened:
    /// table column -> result position.
    remap: Option<Vec<Option<usize>>>,
    layout: ScanLayout,
    visit: &'v mut RowVisitor<'p>,
    progressed: &'v mut bool,
}

impl ResultSink for ScanSink<'_, '_, '_> {
    fn column(&mut self, i: usize, name: &[u8]) {
        if !self.handler {
            return;
        }
        let same = self
            .table
            .columns
            .get(i)
            .is_some_and(|c| c.name.as_bytes() == name);
        if same && self.remap.is_none() {
            return;
        }
        // The table changed: find our columns by name.
        let map = self.remap.get_or_insert_with(|| {
            let mut m: Vec<Option<usize>> = (0..self.table.columns.len())
                .map(|c| (c < i).then_some(c))
                .collect();
            m.resize(self.table.columns.len(), None);
            m
        });
        if let Some(c) = self
            .table
            .columns
            .iter()
            .position(|c| c.name.as_bytes().eq_ignore_ascii_case(name))
        {
            map[c] = Some(i);
        }
    }

    fn row(&mut self, payload: &[u8], row: &TextRow) -> bool {
        if self.lost_a_column() {
            // Never answer a dropped column as NULL.
            return false;
        }
        *self.progressed = true;
        let columns = if self.handler {
            Columns::Table {
                opened: self.opened,
                remap: self.remap.as_deref(),
            }
        } else {
            Columns::Offset(0)
        };
        let view = TextRowView {
            payload,
            row,
            columns,
            ncols: self.opened.len(),
            layout: self.layout,
        };
        (self.visit)(self.scan_no, &view) == ScanStep::Continue
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_keys() {
        let int = ColumnKind::Integer {
            min: -128,
            max: 127,
        };
        for ok in ["0", "127", "-128", "5"] {
            assert!(canonical(&int, ok.as_bytes()), "{ok}");
        }
        for no in ["", "-", "-0", "007", "128", "-129", "1a", " 1", "+1", "1.0"] {
            assert!(!canonical(&int, no.as_bytes()), "{no}");
        }
        let text = ColumnKind::Text {
            charset: "utf8mb4".into(),
            max_chars: 3,
        };
        assert!(canonical(&text, "aé€".as_bytes()));
        assert!(!canonical(&text, b"abcd"));
        assert!(!canonical(&text, b"\xff"));
        let bin = ColumnKind::Bytes {
            max_len: 4,
            fixed: true,
        };
        assert!(canonical(&bin, b"abcd") && !canonical(&bin, b"abc"));
        assert!(!canonical(&TEXT_KIND, b"2020-01-01"));
    }

    #[test]
    fn literals_follow_the_column() {
        let mut sql = Vec::new();
        let text = ColumnKind::Text {
            charset: "latin1".into(),
            max_chars: 10,
        };
        push_literal(&mut sql, &text, Some(b"a'b"));
        assert_eq!(sql, b"_latin1'a\\'b'");
        sql.clear();
        let utf = ColumnKind::Text {
            charset: "utf8mb4".into(),
            max_chars: 10,
        };
        push_literal(&mut sql, &utf, Some(b"\xff"));
        assert_eq!(sql, b"CONVERT(_binary'\xff' USING utf8mb4)");
        sql.clear();
        push_literal(&mut sql, &TEXT_KIND, None);
        assert_eq!(sql, b"NULL");
    }

    #[test]
    fn stored_values() {
        let int = ColumnKind::Integer {
            min: -128,
            max: 127,
        };
        let mut sql = Vec::new();
        push_stored(&mut sql, &int, Some(b"12"));
        assert_eq!(sql, b"12");
        sql.clear();
        push_stored(&mut sql, &int, Some(b"1.7"));
        assert_eq!(
            String::from_utf8_lossy(&sql),
            "LEAST(GREATEST(CAST(_binary'1.7' AS DECIMAL(65,0)), -128), 127)"
        );
        sql.clear();
        let bin = ColumnKind::Bytes {
            max_len: 4,
            fixed: true,
        };
        push_stored(&mut sql, &bin, Some(b"B"));
        assert_eq!(sql, b"CAST(_binary'B' AS BINARY(4))");
    }
}
