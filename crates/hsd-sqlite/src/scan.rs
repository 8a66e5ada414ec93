//! Running scans on one db file, with statements prepared once per opened
//! index: the plain shapes (no NULL key, no filter) sit in a small array
//! indexed by op and key count; other shapes in a map by `ScanShape`.
//!
//! What the statements kept may hold is bounded in bytes: a statement whose
//! SQL is longer than `MAX_KEPT_SQL` (many filters, wide rows) is prepared
//! for its scan and dropped after it, and once the kept statements of a db
//! file hold `MAX_KEPT_BYTES` (SQLite's own count of their memory, plus
//! their SQL) they are all dropped and prepared again on use.

use super::stmt::{RawStatement, Step};
use hs_proto::{FindOp, Value};
use hsd_storage::scan_sql::{self, Dialect, Param, Placeholders, ScanLayout, ScanShape};
use hsd_storage::values::stored_integer;
use hsd_storage::{ColumnKind, FilterMode, FilterVerdict, RowView, Scan, StorageError};
use rusqlite::Connection;
use std::collections::HashMap;

const DIALECT: Dialect = Dialect { lock_suffix: "" };

/// Most key columns a plain shape is kept in the array for; longer keys use
/// the map (indexes that wide are rare).
const PLAIN_KEYS: usize = 8;
/// Most opened indexes one db file keeps statements for; beyond, they are
/// dropped and prepared again on use.
const MAX_INDEXES: usize = 1024;
/// Most statements of other shapes per opened index.
const MAX_SHAPED: usize = 64;
/// Longest SQL of a statement that is kept for the next scan of its shape.
pub(super) const MAX_KEPT_SQL: usize = 16 << 10;
/// Most bytes the kept statements of one db file hold together.
pub(super) const MAX_KEPT_BYTES: usize = 4 << 20;

/// A scan statement and how to bind and read it.
pub(super) struct ScanStatement {
    pub(crate) stmt: RawStatement,
    params: Vec<Param>,
    pub(crate) layout: ScanLayout,
    /// Length of its SQL text.
    sql_len: usize,
}

impl ScanStatement {
    fn prepare(conn: &Connection, scan: &Scan<'_>) -> Result<ScanStatement, StorageError> {
        let mut sink = Placeholders::default();
        let mut sql = Vec::with_capacity(256);
        let layout = scan_sql::build(scan, DIALECT, &mut sink, &mut sql);
        let sql = String::from_utf8(sql).map_err(|_| StorageError::Refused {
            code: 1,
            message: "statement text is not UTF-8".into(),
        })?;
        Ok(ScanStatement {
            stmt: RawStatement::prepare(conn, &sql)?,
            params: sink.params,
            layout,
            sql_len: sql.len(),
        })
    }

    /// About what keeping it costs.
    fn bytes(&self) -> usize {
        self.stmt.memory_used() + self.sql_len
    }

    /// Binds the scan's values. They must stay alive until `reset`.
    ///
    /// A value compared with an INTEGER column is bound as the integer the
    /// original's column would have stored (`'5abc'` is 5, `''` 0), so
    /// that the comparison is numeric as it was there.
    pub(super) fn bind(&mut self, scan: &Scan<'_>) -> Result<(), StorageError> {
        let table = &scan.index.table;
        let key_columns = &scan.index.index_meta().key_columns;
        for (i, p) in self.params.iter().enumerate() {
            match *p {
                Param::Key(k) => {
                    let kind = match key_columns.get(k).copied().flatten() {
                        Some(c) => &table.columns[c].kind,
                        // The rowid.
                        None => &ROWID,
                    };
                    bind_stored(&mut self.stmt, i + 1, kind, scan.keys[k])?
                }
                Param::Filter(f) => {
                    let filter = &scan.filters[f];
                    bind_stored(
                        &mut self.stmt,
                        i + 1,
                        &table.columns[filter.column].kind,
                        filter.value.as_deref(),
                    )?
                }
                Param::After(a) => {
                    let (_, cols) = scan_sql::position_columns(scan.index.index_meta());
                    let kind = match cols.get(a).copied().flatten() {
                        Some(c) => &table.columns[c].kind,
                        None => &ROWID,
                    };
                    let v = scan.after.and_then(|p| p.get(a)).and_then(|v| v.as_deref());
                    bind_stored(&mut self.stmt, i + 1, kind, v)?
                }
                Param::Limit => self
                    .stmt
                    .bind_int(i + 1, i64::try_from(scan.fetch).unwrap_or(i64::MAX))?,
            }
        }
        Ok(())
    }
}

const ROWID: ColumnKind = ColumnKind::Integer {
    min: i64::MIN as i128,
    max: i64::MAX as i128,
};

/// Binds a value as what storing it into a column of `kind` makes.
pub(super) fn bind_stored(
    stmt: &mut RawStatement,
    i: usize,
    kind: &ColumnKind,
    value: Option<&[u8]>,
) -> Result<(), StorageError> {
    match (kind, value) {
        (ColumnKind::Integer { min, max }, Some(v)) => {
            stmt.bind_int(i, stored_integer(v, *min, *max) as i64)
        }
        _ => stmt.bind_text(i, value),
    }
}

/// The statements of one opened index on one db file.
#[derive(Default)]
struct IndexStatements {
    /// Plain shapes: `[op][key count - 1][with locator]`.
    plain: Vec<Option<ScanStatement>>,
    shaped: HashMap<ScanShape, ScanStatement>,
}

/// Every scan statement of one db file, by opened index.
#[derive(Default)]
pub(super) struct ScanStatements {
    by_index: HashMap<u64, IndexStatements>,
    /// What the kept statements cost (`ScanStatement::bytes`).
    kept_bytes: usize,
    /// A statement too big to keep, for the scan running now.
    passing: Option<ScanStatement>,
}

fn op_number(op: FindOp) -> usize {
    match op {
        FindOp::Eq => 0,
        FindOp::Gt => 1,
        FindOp::Ge => 2,
        FindOp::Lt => 3,
        FindOp::Le => 4,
    }
}

/// The array slot of a plain scan, or `None` for another shape.
fn plain_slot(scan: &Scan<'_>) -> Option<usize> {
    let n = scan.keys.len();
    if scan.filter_mode != FilterMode::None
        || scan.after.is_some()
        || n == 0
        || n > PLAIN_KEYS
        || scan.keys.iter().any(Option::is_none)
    {
        return None;
    }
    Some((op_number(scan.op) * PLAIN_KEYS + (n - 1)) * 2 + usize::from(scan.with_locator))
}

impl ScanStatements {
    /// The statement for `scan`, prepared on first use (and kept, unless
    /// too big: see the module comment).
    pub(super) fn get(
        &mut self,
        conn: &Connection,
        scan: &Scan<'_>,
    ) -> Result<&mut ScanStatement, StorageError> {
        self.passing = None;
        if self.by_index.len() >= MAX_INDEXES && !self.by_index.contains_key(&scan.index.id) {
            self.clear();
        }
        let slot = plain_slot(scan);
        let shape = match slot {
            Some(_) => None,
            None => Some(ScanShape::of(scan)),
        };
        if !self.holds(scan.index.id, slot, shape.as_ref()) {
            let st = ScanStatement::prepare(conn, scan)?;
            if st.sql_len > MAX_KEPT_SQL {
                return Ok(self.passing.insert(st));
            }
            let cost = st.bytes();
            if self.kept_bytes + cost > MAX_KEPT_BYTES {
                self.clear();
            }
            self.kept_bytes += cost;
            self.keep(scan.index.id, slot, shape.clone(), st);
        }
        let entry = self.by_index.get_mut(&scan.index.id);
        let found = match (entry, slot, &shape) {
            (Some(e), Some(slot), _) => e.plain.get_mut(slot).and_then(Option::as_mut),
            (Some(e), None, Some(shape)) => e.shaped.get_mut(shape),
            _ => None,
        };
        found.ok_or_else(|| StorageError::Refused {
            code: 1,
            message: "statement vanished".into(),
        })
    }

    /// Whether the statement for this index and slot or shape is kept.
    fn holds(&self, index: u64, slot: Option<usize>, shape: Option<&ScanShape>) -> bool {
        let Some(e) = self.by_index.get(&index) else {
            return false;
        };
        match (slot, shape) {
            (Some(slot), _) => e.plain.get(slot).is_some_and(Option::is_some),
            (None, Some(shape)) => e.shaped.contains_key(shape),
            (None, None) => false,
        }
    }

    fn keep(
        &mut self,
        index: u64,
        slot: Option<usize>,
        shape: Option<ScanShape>,
        st: ScanStatement,
    ) {
        let entry = self.by_index.entry(index).or_default();
        match (slot, shape) {
            (Some(slot), _) => {
                if entry.plain.len() <= slot {
                    entry.plain.resize_with(slot + 1, || None);
                }
                entry.plain[slot] = Some(st);
            }
            (None, Some(shape)) => {
                if entry.shaped.len() >= MAX_SHAPED {
                    let dropped: usize = entry.shaped.values().map(ScanStatement::bytes).sum();
                    self.kept_bytes = self.kept_bytes.saturating_sub(dropped);
                    entry.shaped.clear();
                }
                entry.shaped.insert(shape, st);
            }
            (None, None) => {}
        }
    }

    /// Drops the statement too big to keep, once its scan is done.
    pub(super) fn release_passing(&mut self) {
        self.passing = None;
    }

    /// Drops every statement.
    pub(super) fn clear(&mut self) {
        self.by_index.clear();
        self.kept_bytes = 0;
        self.passing = None;
    }

    /// What the kept statements cost, and how many there are.
    #[cfg(test)]
    #[cfg(test)]
    fn kept(&self) -> (usize, usize) {
        let count = self
            .by_index
            .values()
            .map(|e| e.plain.iter().flatten().count() + e.shaped.len())
            .sum();
        (self.kept_bytes, count)
    }
}

/// The current row of a scan statement, as the executor sees it.
pub(super) struct SqliteRow<'s> {
    pub(crate) stmt: &'s RawStatement,
    pub(crate) ncols: usize,
    pub(crate) layout: ScanLayout,
}

impl RowView for SqliteRow<'_> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        self.stmt.column(i)
    }

    fn filter_state(&self) -> FilterVerdict {
        if !self.layout.has_state {
            return FilterVerdict::Pass;
        }
        FilterVerdict::from_state(self.stmt.column_int(self.ncols))
    }

    fn locator(&self) -> Vec<Value> {
        let start = self.ncols + usize::from(self.layout.has_state);
        (start..start + self.layout.locator_len)
            .map(|i| self.stmt.column(i).map(<[u8]>::to_vec))
            .collect()
    }

    fn exact(&self, k: usize) -> Option<&[u8]> {
        if k >= self.layout.exact_len {
            return None;
        }
        let start = self.ncols + usize::from(self.layout.has_state);
        self.stmt.column(start + self.layout.locator_len + k)
    }
}

/// Steps `stmt` once; `Ok(false)` at the end.
pub(super) fn next_row(stmt: &mut RawStatement) -> Result<bool, StorageError> {
    Ok(stmt.step()? == Step::Row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hs_proto::{FilterKind, FilterOp};
    use hsd_storage::{OpenedIndex, ResolvedFilter};
    use std::sync::Arc;

    /// A long column name makes wide statements long.
    const LONG: &str = "a_column_whose_name_is_long_enough_to_make_wide_statements_long";

    fn table(conn: &Connection) -> Arc<hsd_storage::TableMeta> {
        conn.execute_batch(&format!(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, a INTEGER, {LONG} TEXT)"
        ))
        .unwrap();
        Arc::new(crate::meta::describe_table(conn, "test", "t").unwrap())
    }

    fn scan<'a>(index: &'a OpenedIndex, filters: &'a [ResolvedFilter]) -> Scan<'a> {
        Scan {
            index,
            op: FindOp::Ge,
            keys: vec![Some(b"1")],
            filters,
            filter_mode: if filters.is_empty() {
                FilterMode::None
            } else {
                FilterMode::StateColumn {
                    exclude_skipped: true,
                }
            },
            fetch: 10,
            with_locator: false,
            after: None,
        }
    }

    #[test]
    fn kept_statements_stay_within_their_bytes() {
        let conn = Connection::open_in_memory().unwrap();
        let table = table(&conn);
        let mut statements = ScanStatements::default();
        let ops = [FilterOp::Eq, FilterOp::Ne, FilterOp::Gt, FilterOp::Lt];
        let mut most = 0;
        let mut biggest = 0;
        // Many opened indexes, each with statements of many shapes: 128
        // filters (the most a request may carry) of varying operators.
        for id in 0..40u64 {
            let index = OpenedIndex {
                id,
                table: table.clone(),
                index: 0,
                columns: vec![0, 1],
                filter_columns: vec![1],
            };
            for shape in 0..ops.len() * 2 {
                let filters: Vec<ResolvedFilter> = (0..128)
                    .map(|i| ResolvedFilter {
                        kind: if shape % 2 == 0 {
                            FilterKind::While
                        } else {
                            FilterKind::Skip
                        },
                        op: ops[(i + shape / 2) % ops.len()],
                        column: 1,
                        value: Some(b"5".to_vec()),
                    })
                    .collect();
                let st = statements.get(&conn, &scan(&index, &filters)).unwrap();
                biggest = biggest.max(st.bytes());
                st.stmt.reset();
                most = most.max(statements.kept().0);
            }
        }
        let (bytes, count) = statements.kept();
        eprintln!(
            "scan statements: 320 shapes with 128 filters, {biggest} bytes the largest; \
             at most {most} bytes kept ({count} statements, {bytes} bytes at the end)"
        );
        assert!(most <= MAX_KEPT_BYTES, "kept {most} bytes");
        assert!(count > 0);
    }

    #[test]
    fn statements_with_long_sql_are_not_kept() {
        let conn = Connection::open_in_memory().unwrap();
        let table = table(&conn);
        // The long column, listed 400 times: about 26 KB of SQL.
        let index = OpenedIndex {
            id: 1,
            table,
            index: 0,
            columns: vec![2; 400],
            filter_columns: vec![],
        };
        let st = statements_get(&conn, &index);
        assert!(st.0 > MAX_KEPT_SQL, "{} bytes of SQL", st.0);
        assert_eq!(st.1, (0, 0), "a long statement was kept");
    }

    /// Runs one scan on `index`: its SQL length and what is kept after it.
    fn statements_get(conn: &Connection, index: &OpenedIndex) -> (usize, (usize, usize)) {
        let mut statements = ScanStatements::default();
        let scan = scan(index, &[]);
        let st = statements.get(conn, &scan).unwrap();
        st.bind(&scan).unwrap();
        let len = st.sql_len;
        assert!(!next_row(&mut st.stmt).unwrap(), "the table is empty");
        st.stmt.reset();
        statements.release_passing();
        (len, statements.kept())
    }
}
