//! Turns a `Scan` into one SELECT statement, shared by every SQL backend.
//!
//! Where a value goes, the builder asks a `ValueSink`: the embedded store
//! writes a `?` and binds the value later (its statements are prepared once
//! per shape), the MySQL backend writes the value itself as a literal (it
//! speaks the text protocol). Everything else in the text depends only on
//! the scan's shape (index, op, key count, which keys and filter values are
//! NULL, filters, mode).
//!
//! NULL sorts lowest, as in an index: each comparison below is written so
//! that a NULL column or key behaves that way instead of yielding SQL NULL.

use super::{ColumnMeta, FilterMode, FilterVerdict, LocateForm, ResolvedFilter, Scan, TableMeta};
use hs_proto::{FilterKind, FilterOp, FindOp};

/// Everything that changes the text of a scan's statement (given a sink
/// that writes placeholders).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ScanShape {
    pub opened_index: u64,
    pub op: FindOp,
    /// One flag per key value: set when the value is NULL.
    pub key_nulls: Vec<bool>,
    pub filters: Vec<(FilterKind, FilterOp, usize, bool)>,
    pub filter_mode: FilterMode,
    pub with_locator: bool,
    /// One flag per `after` value (set when NULL); `None` without `after`.
    pub after_nulls: Option<Vec<bool>>,
}

impl ScanShape {
    pub fn of(scan: &Scan<'_>) -> ScanShape {
        ScanShape {
            opened_index: scan.index.id,
            op: scan.op,
            key_nulls: scan.keys.iter().map(Option::is_none).collect(),
            filters: scan
                .filters
                .iter()
                .map(|f| (f.kind, f.op, f.column, f.value.is_none()))
                .collect(),
            filter_mode: scan.filter_mode,
            with_locator: scan.with_locator,
            after_nulls: scan.after.map(|a| a.iter().map(Option::is_none).collect()),
        }
    }
}

/// Which value of the scan goes at a place in the statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// Key value `i`, compared with key column `i`.
    Key(usize),
    /// Filter `i`'s value, compared with that filter's column.
    Filter(usize),
    /// Value `i` of the scan's `after` position, compared with position
    /// column `i` (the index's key columns, then its tiebreak columns).
    After(usize),
    /// The row limit.
    Limit,
}

/// Writes values into statement text.
pub trait ValueSink {
    fn value(&mut self, sql: &mut Vec<u8>, param: Param);
}

/// A sink that writes `?` and remembers which value each stands for.
#[derive(Debug, Default)]
pub struct Placeholders {
    pub params: Vec<Param>,
}

impl ValueSink for Placeholders {
    fn value(&mut self, sql: &mut Vec<u8>, param: Param) {
        sql.push(b'?');
        self.params.push(param);
    }
}

/// What a built statement returns, column by column.
#[derive(Debug, Clone, Copy)]
pub struct ScanLayout {
    /// Opened columns first; then the filter state column if any.
    pub has_state: bool,
    /// Then this many locator columns: the table's locator, then the row's
    /// position in the index (`position_columns`).
    pub locator_len: usize,
    /// Then, with the locator, the exact value of each opened column whose
    /// text rounds it (`exact_columns`).
    pub exact_len: usize,
}

impl ScanLayout {
    /// What `build` makes of `scan`.
    pub fn of(scan: &Scan<'_>) -> ScanLayout {
        let index = scan.index.index_meta();
        ScanLayout {
            has_state: matches!(scan.filter_mode, FilterMode::StateColumn { .. }),
            locator_len: if scan.with_locator {
                scan.index.table.locator_sql.len() + index.key_sql.len() + index.tiebreak_sql.len()
            } else {
                0
            },
            exact_len: if scan.with_locator {
                scan.index.exact_columns().count()
            } else {
                0
            },
        }
    }
}

/// `CAST(col AS DOUBLE)`: a FLOAT's stored value exactly (a double holds
/// every float), where its text has six digits.
pub fn push_exact(sql: &mut Vec<u8>, column_sql: &str) {
    sql.extend_from_slice(b"CAST(");
    sql.extend_from_slice(column_sql.as_bytes());
    sql.extend_from_slice(b" AS DOUBLE)");
}

/// Selects a locator or position value, `expr_sql` (a column, or a prefix
/// of one), in the form that names it exactly (`LocateForm`) when it is
/// the whole `column`.
pub fn push_locate_read(sql: &mut Vec<u8>, expr_sql: &str, column: Option<&ColumnMeta>) {
    match column.map(|c| &c.locate) {
        Some(LocateForm::Number {
            read_sql: Some(read),
            ..
        }) => sql.extend_from_slice(read.as_bytes()),
        _ => sql.extend_from_slice(expr_sql.as_bytes()),
    }
}

/// The columns that order an index's rows (key columns, then the
/// tiebreak), as SQL and as table column positions (`None`: the rowid).
pub fn position_columns(index: &super::IndexMeta) -> (Vec<&str>, Vec<Option<usize>>) {
    let sql = index
        .key_sql
        .iter()
        .chain(&index.tiebreak_sql)
        .map(String::as_str)
        .collect();
    let cols = index
        .key_columns
        .iter()
        .chain(&index.tiebreak_columns)
        .copied()
        .collect();
    (sql, cols)
}

/// Options a dialect needs beyond the metadata's fragments.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// Appended to SELECTs run inside a write transaction (`FOR UPDATE`).
    pub lock_suffix: &'static str,
}

/// Appends the SELECT for `scan` to `sql`.
pub fn build(
    scan: &Scan<'_>,
    dialect: Dialect,
    sink: &mut impl ValueSink,
    sql: &mut Vec<u8>,
) -> ScanLayout {
    let index = scan.index.index_meta();
    let table = &scan.index.table;
    sql.extend_from_slice(b"SELECT ");
    let mut first = true;
    let mut sep = |sql: &mut Vec<u8>| {
        if !first {
            sql.extend_from_slice(b", ");
        }
        first = false;
    };
    for &c in &scan.index.columns {
        sep(sql);
        sql.extend_from_slice(table.columns[c].select_sql.as_bytes());
    }
    let layout = ScanLayout::of(scan);
    if layout.has_state {
        sep(sql);
        state_expr(scan.filters, table, sink, sql);
    }
    let (position_sql, position_cols) = position_columns(index);
    if scan.with_locator {
        for (i, l) in table.locator_sql.iter().enumerate() {
            sep(sql);
            push_locate_read(sql, l, table.locator_column(i));
        }
        for (p, c) in position_sql.iter().zip(&position_cols) {
            sep(sql);
            // As the locator: the walk goes on from exactly the row it read.
            let whole_column = c.map(|c| &table.columns[c]).filter(|c| &c.name_sql == p);
            push_locate_read(sql, p, whole_column);
        }
        for c in scan.index.exact_columns() {
            sep(sql);
            push_exact(sql, &table.columns[c].name_sql);
        }
    }
    if first {
        // Nothing opened: still one row per match.
        sql.push(b'1');
    }
    sql.extend_from_slice(b" FROM ");
    sql.extend_from_slice(index.from_sql.as_bytes());
    sql.extend_from_slice(b" WHERE ");
    key_condition(scan, key_op(scan), &index.key_sql, sink, sql);
    if index.hash && scan.after.is_some() && matches!(scan.op, FindOp::Lt | FindOp::Le) {
        // The original's engine found the key, then could not go back.
        sql.extend_from_slice(b" AND 1=0");
    }
    match scan.filter_mode {
        FilterMode::InWhere => {
            for (i, f) in scan.filters.iter().enumerate() {
                sql.extend_from_slice(b" AND ");
                filter_condition(f, i, table, sink, sql);
            }
        }
        FilterMode::StateColumn {
            exclude_skipped: true,
        } => {
            sql.extend_from_slice(b" AND ");
            state_expr(scan.filters, table, sink, sql);
            sql.extend_from_slice(b" <> 1");
        }
        _ => {}
    }
    if let Some(after) = scan.after {
        sql.extend_from_slice(b" AND ");
        let strict = if scan.op.is_descending() {
            FindOp::Lt
        } else {
            FindOp::Gt
        };
        let n = after.len().min(position_sql.len());
        let (_, positions) = position_columns(index);
        let cols = cols_of(table, &position_sql[..n], &positions);
        let is_null = |i: usize| after[i].is_none();
        lexicographic(&cols, 0, strict, strict, &is_null, &Param::After, sink, sql);
    }
    let dir: &[u8] = if scan.op.is_descending() {
        b" DESC"
    } else {
        b""
    };
    sql.extend_from_slice(b" ORDER BY ");
    for (n, k) in index
        .key_sql
        .iter()
        .chain(index.tiebreak_sql.iter())
        .enumerate()
    {
        if n > 0 {
            sql.extend_from_slice(b", ");
        }
        sql.extend_from_slice(k.as_bytes());
        sql.extend_from_slice(dir);
    }
    if index.hash && matches!(scan.op, FindOp::Lt | FindOp::Le) {
        // See `key_op`: one row at most.
        sql.extend_from_slice(b" LIMIT 1");
    } else {
        sql.extend_from_slice(b" LIMIT ");
        sink.value(sql, Param::Limit);
    }
    if scan.with_locator {
        sql.extend_from_slice(dialect.lock_suffix.as_bytes());
    }
    layout
}

/// `CASE WHEN NOT f1 THEN v1 ... ELSE 0 END`: the first false filter
/// decides; the numbers are `FilterVerdict`s.
fn state_expr(
    filters: &[ResolvedFilter],
    table: &TableMeta,
    sink: &mut impl ValueSink,
    sql: &mut Vec<u8>,
) {
    sql.extend_from_slice(b"(CASE");
    for (i, f) in filters.iter().enumerate() {
        let verdict = match f.kind {
            FilterKind::Skip => FilterVerdict::Skip,
            FilterKind::While => FilterVerdict::Stop,
        };
        sql.extend_from_slice(b" WHEN NOT ");
        filter_condition(f, i, table, sink, sql);
        sql.extend_from_slice(format!(" THEN {}", verdict as i64).as_bytes());
    }
    sql.extend_from_slice(format!(" ELSE {} END)", FilterVerdict::Pass as i64).as_bytes());
}

/// A filter as a condition that is never NULL. NULL is equal to NULL and
/// lower than any value; an unknown operator is false or true by the
/// original's rules (`FilterOp::Never`, `FilterOp::Always`).
pub(crate) fn filter_condition(
    f: &ResolvedFilter,
    i: usize,
    table: &TableMeta,
    sink: &mut impl ValueSink,
    sql: &mut Vec<u8>,
) {
    let column = &table.columns[f.column];
    let c = column.name_sql.as_bytes();
    // A NOT NULL column is never NULL; `IS NULL` would even hold for the
    // zero date of a NOT NULL DATE/DATETIME column (an ODBC rule).
    let (is_null, is_not_null): (&[&[u8]], &[&[u8]]) = if column.nullable {
        (&[b"(", c, b" IS NULL)"], &[b"(", c, b" IS NOT NULL)"])
    } else {
        (&[b"(1=0)"], &[b"(1=1)"])
    };
    let mut put = |parts: &[&[u8]]| {
        for p in parts {
            sql.extend_from_slice(p);
        }
    };
    if f.op == FilterOp::Always {
        return put(&[b"(1=1)"]);
    }
    if f.value.is_none() {
        return match f.op {
            FilterOp::Eq | FilterOp::Le => put(is_null),
            FilterOp::Ne | FilterOp::Gt => put(is_not_null),
            FilterOp::Ge => put(&[b"(1=1)"]),
            FilterOp::Lt | FilterOp::Never => put(&[b"(1=0)"]),
            FilterOp::Always => put(&[b"(1=1)"]),
        };
    }
    let (sql_op, null_col_result): (&[u8], &[u8]) = match f.op {
        FilterOp::Eq => (b" = ", b"0"),
        FilterOp::Ne => (b" <> ", b"1"),
        FilterOp::Gt => (b" > ", b"0"),
        FilterOp::Ge => (b" >= ", b"0"),
        FilterOp::Lt => (b" < ", b"1"),
        FilterOp::Le => (b" <= ", b"1"),
        FilterOp::Never => return put(&[b"(1=0)"]),
        FilterOp::Always => return put(&[b"(1=1)"]),
    };
    put(&[b"(COALESCE(", c, sql_op]);
    sink.value(sql, Param::Filter(i));
    sql.extend_from_slice(b", ");
    sql.extend_from_slice(null_col_result);
    sql.extend_from_slice(b") <> 0)");
}

/// A key or position column as the key conditions use it.
struct Col {
    sql: String,
    /// NOT NULL columns get no NULL tests (see `filter_condition`).
    nullable: bool,
}

fn cols_of(table: &TableMeta, sql: &[&str], positions: &[Option<usize>]) -> Vec<Col> {
    sql.iter()
        .enumerate()
        .map(|(i, c)| Col {
            sql: c.to_string(),
            nullable: positions
                .get(i)
                .copied()
                .flatten()
                .is_none_or(|p| table.columns[p].nullable),
        })
        .collect()
}

/// The operator of a scan's key condition. On a HASH index it is `=`
/// whatever was asked, as on the original: its engine seeks the key's hash
/// and ignores the operator, so `>` and `>=` read the rows equal to the key
/// (and stop there), `<` and `<=` the first of them (going back fails).
/// Which of the equal rows comes first is the hash chain's order, which no
/// statement can ask for: here they come in the table's key order.
fn key_op(scan: &Scan<'_>) -> FindOp {
    if scan.index.index_meta().hash {
        FindOp::Eq
    } else {
        scan.op
    }
}

/// The key condition over the first `n` index columns, lexicographic, with
/// NULL lowest. For range ops the first column's bound is also stated on its
/// own, so the planner can seek to it.
fn key_condition(
    scan: &Scan<'_>,
    op: FindOp,
    key_sql: &[String],
    sink: &mut impl ValueSink,
    sql: &mut Vec<u8>,
) {
    let n = scan.keys.len().min(key_sql.len());
    let names: Vec<&str> = key_sql[..n].iter().map(String::as_str).collect();
    let cols = &cols_of(
        &scan.index.table,
        &names,
        &scan.index.index_meta().key_columns,
    )[..];
    let is_null = |i: usize| scan.keys[i].is_none();
    if op == FindOp::Eq {
        for (i, c) in cols.iter().enumerate() {
            if i > 0 {
                sql.extend_from_slice(b" AND ");
            }
            eq(c, Param::Key(i), is_null(i), sink, sql);
        }
        return;
    }
    // Lexicographic: k1 op' v1 OR (k1 = v1 AND (k2 op' v2 OR (... kn op vn)))
    // where op' is the strict form of op.
    let strict = match op {
        FindOp::Gt | FindOp::Ge => FindOp::Gt,
        _ => FindOp::Lt,
    };
    if n > 1 {
        // The seek bound on the leading column (implied by the expression).
        let inclusive = match strict {
            FindOp::Gt => FindOp::Ge,
            _ => FindOp::Le,
        };
        cmp(&cols[0], Param::Key(0), inclusive, is_null(0), sink, sql);
        sql.extend_from_slice(b" AND ");
    }
    lexicographic(cols, 0, op, strict, &is_null, &Param::Key, sink, sql);
}

#[allow(clippy::too_many_arguments)]
fn lexicographic(
    cols: &[Col],
    i: usize,
    op: FindOp,
    strict: FindOp,
    is_null: &dyn Fn(usize) -> bool,
    param: &dyn Fn(usize) -> Param,
    sink: &mut impl ValueSink,
    sql: &mut Vec<u8>,
) {
    if i + 1 == cols.len() {
        sql.push(b'(');
        cmp(&cols[i], param(i), op, is_null(i), sink, sql);
        sql.push(b')');
        return;
    }
    sql.push(b'(');
    cmp(&cols[i], param(i), strict, is_null(i), sink, sql);
    sql.extend_from_slice(b" OR (");
    eq(&cols[i], param(i), is_null(i), sink, sql);
    sql.extend_from_slice(b" AND ");
    lexicographic(cols, i + 1, op, strict, is_null, param, sink, sql);
    sql.extend_from_slice(b"))");
}

fn eq(col: &Col, param: Param, null: bool, sink: &mut impl ValueSink, sql: &mut Vec<u8>) {
    if null && !col.nullable {
        sql.extend_from_slice(b"1=0");
        return;
    }
    sql.extend_from_slice(col.sql.as_bytes());
    if null {
        sql.extend_from_slice(b" IS NULL");
    } else {
        sql.extend_from_slice(b" = ");
        sink.value(sql, param);
    }
}

fn cmp(
    col: &Col,
    param: Param,
    op: FindOp,
    null: bool,
    sink: &mut impl ValueSink,
    sql: &mut Vec<u8>,
) {
    let c = col.sql.as_bytes();
    if !col.nullable {
        // Never NULL: a NULL bound is below every value, no NULL row follows.
        match (op, null) {
            (FindOp::Gt | FindOp::Ge, true) => return extend(sql, &[b"1=1"]),
            (FindOp::Lt | FindOp::Le, true) => return extend(sql, &[b"1=0"]),
            (FindOp::Lt, false) => {
                extend(sql, &[c, b" < "]);
                return sink.value(sql, param);
            }
            (FindOp::Le, false) => {
                extend(sql, &[c, b" <= "]);
                return sink.value(sql, param);
            }
            _ => {}
        }
    }
    let (pre, post): (&[u8], &[u8]) = match (op, null) {
        (FindOp::Eq, _) => return eq(col, param, null, sink, sql),
        (FindOp::Gt, true) => return extend(sql, &[c, b" IS NOT NULL"]),
        (FindOp::Ge, true) => return extend(sql, &[b"1=1"]),
        (FindOp::Lt, true) => return extend(sql, &[b"1=0"]),
        (FindOp::Le, true) => return extend(sql, &[c, b" IS NULL"]),
        (FindOp::Gt, false) => (b" > ", b""),
        (FindOp::Ge, false) => (b" >= ", b""),
        (FindOp::Lt, false) => (b" < ", b" OR "),
        (FindOp::Le, false) => (b" <= ", b" OR "),
    };
    if post.is_empty() {
        extend(sql, &[c, pre]);
        sink.value(sql, param);
    } else {
        extend(sql, &[b"(", c, pre]);
        sink.value(sql, param);
        extend(sql, &[post, c, b" IS NULL)"]);
    }
}

fn extend(sql: &mut Vec<u8>, parts: &[&[u8]]) {
    for p in parts {
        sql.extend_from_slice(p);
    }
}
