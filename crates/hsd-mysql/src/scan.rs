//! `scan_many` for MySQL/MariaDB: every scan of a batch (all finds that
//! the event loop's client connections queued together) planned into few
//! statements, sent together, answers read in order.
//!
//! - Point lookups (`=` on every column of a unique index, no NULL key, no
//!   filter) whose keys are written exactly as the server stores them
//!   (`values::is_stored_form`), two or more of one opened index: one `SELECT (CASE WHEN
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

use super::errors::refused_error;
use super::handler::{push_index_name, Handles, Housekeeping};
use super::link::{Answer, Failure, Link, ResultSink};
use super::literal::{push_number_literal, push_stored, TEXT_KIND};
use super::points::{points_lead, points_locator_len, run_points};
use super::rows::{Columns, TextRowView};
use hs_proto::FindOp;
use hsd_storage::scan_sql::{self, Dialect, Param, ScanLayout, ValueSink};
use hsd_storage::values::{is_stored_form, stored_integer};
use hsd_storage::{ColumnKind, FilterMode, LocateForm, RowVisitor, Scan, ScanStep, TableMeta};
use mysql_wire::literal::{push_binary, push_number};
use mysql_wire::TextRow;
use std::collections::HashMap;

pub(super) const DIALECT: Dialect = Dialect {
    lock_suffix: " FOR UPDATE",
};

/// "Unknown table in HANDLER": the alias is not open on the server.
const ER_UNKNOWN_TABLE: u16 = 1109;
/// The table's engine does not do what was asked (HANDLER on a MERGE table).
const ER_ILLEGAL_HA: u16 = 1031;
/// "Unknown column": what a client sees when an opened column was dropped.
const ER_BAD_FIELD_ERROR: u32 = 1054;

/// Writes a scan's values as literals for the shared SELECT.
pub(super) struct Literals<'a, 's> {
    pub(super) scan: &'a Scan<'s>,
    /// The server is vtgate: an integer key goes as the number its column
    /// stores, computed here (`values::stored_integer`, what the SQL
    /// conversion gives). vtgate routes by the literal, and its `hash`
    /// vindex reads no expression and no negative DECIMAL (`-5.2` stored
    /// is -5): such a key would find its row on no shard.
    pub(super) vitess: bool,
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
                    (None, Some(v)) if self.vitess => match kind {
                        ColumnKind::Integer { min, max } => {
                            let n = stored_integer(v, *min, *max);
                            sql.extend_from_slice(n.to_string().as_bytes());
                        }
                        _ => push_stored(sql, kind, Some(v)),
                    },
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
                // (a prefix part already selected as its prefix), read in
                // the form that names them exactly (`LocateForm`).
                let (position_sql, cols) = scan_sql::position_columns(self.scan.index.index_meta());
                let column = cols.get(i).copied().flatten().map(|c| &table.columns[c]);
                let v = self
                    .scan
                    .after
                    .and_then(|a| a.get(i))
                    .and_then(|v| v.as_deref());
                let whole_column =
                    column.filter(|c| position_sql.get(i).is_some_and(|p| *p == c.name_sql));
                if let (Some(c), Some(text)) = (whole_column, v) {
                    if let LocateForm::Number { approximate, .. } = c.locate {
                        if push_number_literal(sql, text, approximate) {
                            return;
                        }
                    }
                }
                push_stored(sql, column.map_or(&TEXT_KIND, |c| &c.kind), v);
            }
            Param::Limit => push_number(sql, self.scan.fetch),
        }
    }
}

pub(super) fn key_kind<'a>(scan: &'a Scan<'_>, i: usize) -> &'a ColumnKind {
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
            .all(|(i, k)| k.is_some_and(|k| is_stored_form(key_kind(scan, i), k)))
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
enum Queued {
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
/// (after which a failure may not be retried). `handler_reads: false`
/// reads by SELECT only (a Galera node read causally: HANDLER reads do not
/// honour `wsrep_sync_wait`).
pub(super) async fn scan_many(
    link: &mut Link,
    handles: &mut Handles,
    scans: &[Scan<'_>],
    visit: &mut RowVisitor<'_>,
    progressed: &mut bool,
    handler_reads: bool,
) -> Result<(), Failure> {
    // vtgate does not parse HANDLER (1105): SELECTs only, which it routes
    // by the vindex and merges in ORDER BY order across shards.
    let vitess = link.server.is_vitess();
    let handler_reads = handler_reads && !vitess;
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
        } else if handler_reads && handler_can_read(scan) && !handles.refuses(&scan.index.table) {
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
                *r = if scan.with_locator || !handler_reads || handles.refuses(&scan.index.table) {
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
    let mut pending: Vec<Queued> = Vec::new();
    for (scan, route) in scans.iter().zip(&routes) {
        match route {
            Route::Points(_) => {}
            Route::Handler => {
                let mut housekeeping = Vec::new();
                let alias = handles.alias_for(link, &scan.index.table, &mut housekeeping);
                pending.extend(housekeeping.into_iter().map(Queued::Handle));
                link.queue(|sql| handler_read(sql, &alias, scan));
                pending.push(Queued::Scan);
            }
            Route::Select => {
                link.queue(|sql| {
                    scan_sql::build(scan, DIALECT, &mut Literals { scan, vitess }, sql);
                });
                pending.push(Queued::Scan);
            }
        }
    }
    link.send().await?;

    let mut first_error = None;
    let mut by_select = Vec::new();
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
                        error: hsd_storage::StorageError::Unavailable(e),
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
        let mut engine_refused = false;
        while let Some(&Queued::Handle(kind)) = next.peek() {
            next.next();
            if let Answer::Refused(e) = link.answer(&mut super::link::Discard).await? {
                // An OPEN that failed left nothing open; a CLOSE that failed
                // closed nothing that is still there.
                if kind == Housekeeping::Open {
                    handles.forget(&scan.index.table);
                    if e.code == ER_ILLEGAL_HA {
                        handles.refuse(&scan.index.table);
                        engine_refused = true;
                    } else {
                        first_error.get_or_insert(refused_error(&e));
                    }
                }
            }
        }
        next.next();
        if engine_refused {
            // The READ on the handle that never opened fails (1109); the
            // scan runs again by SELECT once this batch is read.
            let _ = link.answer(&mut super::link::Discard).await?;
            by_select.push(i);
            continue;
        }
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
            first_error.get_or_insert(hsd_storage::StorageError::Refused {
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
    if !by_select.is_empty() {
        select_again(link, scans, &by_select, visit, progressed, &mut first_error).await?;
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

/// The scans whose table refused HANDLER (`which`), by SELECT: the answer
/// SQL gives (the original plugin reads such a table through the engine's
/// handler; on a MERGE table its find crashes MariaDB 10.11).
async fn select_again(
    link: &mut Link,
    scans: &[Scan<'_>],
    which: &[usize],
    visit: &mut RowVisitor<'_>,
    progressed: &mut bool,
    first_error: &mut Option<hsd_storage::StorageError>,
) -> Result<(), Failure> {
    let vitess = link.server.is_vitess();
    for &i in which {
        let scan = &scans[i];
        link.queue(|sql| {
            scan_sql::build(scan, DIALECT, &mut Literals { scan, vitess }, sql);
        });
    }
    for &i in which {
        let scan = &scans[i];
        let mut sink = ScanSink {
            scan_no: i,
            table: &scan.index.table,
            opened: &scan.index.columns,
            handler: false,
            remap: None,
            layout: ScanLayout::of(scan),
            visit: &mut *visit,
            progressed: &mut *progressed,
        };
        if let Answer::Refused(e) = link.answer(&mut sink).await? {
            first_error.get_or_insert(refused_error(&e));
        }
    }
    Ok(())
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
