//! Running scans on one db file, with statements prepared once per opened
//! index: the plain shapes (no NULL key, no filter) sit in a small array
//! indexed by op and key count; other shapes in a map by `ScanShape`.

use super::stmt::{RawStatement, Step};
use crate::backend::scan_sql::{self, Dialect, Param, Placeholders, ScanLayout, ScanShape};
use crate::backend::values::stored_integer;
use crate::backend::{ColumnKind, FilterMode, FilterVerdict, RowView, Scan, StorageError};
use hs_proto::{FindOp, Value};
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

/// A scan statement and how to bind and read it.
pub struct ScanStatement {
    pub stmt: RawStatement,
    params: Vec<Param>,
    pub layout: ScanLayout,
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
        })
    }

    /// Binds the scan's values. They must stay alive until `reset`.
    ///
    /// A value compared with an INTEGER column is bound as the integer the
    /// original's column would have stored (`'5abc'` is 5, `''` 0), so
    /// that the comparison is numeric as it was there.
    pub fn bind(&mut self, scan: &Scan<'_>) -> Result<(), StorageError> {
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
pub fn bind_stored(
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
pub struct ScanStatements {
    by_index: HashMap<u64, IndexStatements>,
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
    /// The statement for `scan`, prepared on first use.
    pub fn get(
        &mut self,
        conn: &Connection,
        scan: &Scan<'_>,
    ) -> Result<&mut ScanStatement, StorageError> {
        if self.by_index.len() >= MAX_INDEXES && !self.by_index.contains_key(&scan.index.id) {
            self.by_index.clear();
        }
        let entry = self.by_index.entry(scan.index.id).or_default();
        match plain_slot(scan) {
            Some(slot) => {
                if entry.plain.len() <= slot {
                    entry.plain.resize_with(slot + 1, || None);
                }
                let cell = &mut entry.plain[slot];
                if cell.is_none() {
                    *cell = Some(ScanStatement::prepare(conn, scan)?);
                }
                cell.as_mut().ok_or_else(|| StorageError::Refused {
                    code: 1,
                    message: "statement vanished".into(),
                })
            }
            None => {
                let shape = ScanShape::of(scan);
                if !entry.shaped.contains_key(&shape) {
                    if entry.shaped.len() >= MAX_SHAPED {
                        entry.shaped.clear();
                    }
                    let s = ScanStatement::prepare(conn, scan)?;
                    entry.shaped.insert(shape.clone(), s);
                }
                entry
                    .shaped
                    .get_mut(&shape)
                    .ok_or_else(|| StorageError::Refused {
                        code: 1,
                        message: "statement vanished".into(),
                    })
            }
        }
    }

    pub fn clear(&mut self) {
        self.by_index.clear();
    }
}

/// The current row of a scan statement, as the executor sees it.
pub struct SqliteRow<'s> {
    pub stmt: &'s RawStatement,
    pub ncols: usize,
    pub layout: ScanLayout,
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
}

/// Steps `stmt` once; `Ok(false)` at the end.
pub fn next_row(stmt: &mut RawStatement) -> Result<bool, StorageError> {
    Ok(stmt.step()? == Step::Row)
}
