//! The INSERT, UPDATE and DELETE statements writes run, shared by every SQL
//! backend: rows are addressed by the table's locator (rowid, primary key or
//! a unique NOT NULL key), new values first. Values go through a
//! `ValueSink` as in `scan_sql`: `?` for the embedded store, literals for
//! MySQL.

use super::{ColumnMeta, TableMeta};

/// Which value goes at a place in a write statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteParam {
    /// The `i`-th new value (of the `columns` given).
    Value(usize),
    /// The `i`-th locator value.
    Locator(usize),
}

/// Writes values into write statements.
pub trait WriteSink {
    fn value(&mut self, sql: &mut Vec<u8>, param: WriteParam);

    /// A new value for `column` (an INSERT's VALUES, an UPDATE's SET): a
    /// sink may write it in the column's own form (`ColumnMeta::write_form`).
    fn column_value(&mut self, sql: &mut Vec<u8>, param: WriteParam, _column: &ColumnMeta) {
        self.value(sql, param)
    }
}

/// A sink that writes `?`; values bind in the order they appear.
#[derive(Debug, Default)]
pub struct WritePlaceholders;

impl WriteSink for WritePlaceholders {
    fn value(&mut self, sql: &mut Vec<u8>, _param: WriteParam) {
        sql.push(b'?');
    }
}

/// `INSERT INTO t (c1, ...) VALUES (v1, ...)`. With no columns the
/// `() VALUES ()` form, which SQLite spells `DEFAULT VALUES` (its caller
/// handles that case).
pub fn insert(table: &TableMeta, columns: &[usize], sink: &mut impl WriteSink, sql: &mut Vec<u8>) {
    sql.extend_from_slice(b"INSERT INTO ");
    sql.extend_from_slice(table.table_sql.as_bytes());
    sql.extend_from_slice(b" (");
    for (n, &c) in columns.iter().enumerate() {
        if n > 0 {
            sql.extend_from_slice(b", ");
        }
        sql.extend_from_slice(table.columns[c].name_sql.as_bytes());
    }
    sql.extend_from_slice(b") VALUES ");
    values_row(table, columns, sink, sql);
}

/// `(v1, ...)`: one row of an INSERT's VALUES (a multi-row INSERT appends
/// more, each after `, `).
pub fn values_row(
    table: &TableMeta,
    columns: &[usize],
    sink: &mut impl WriteSink,
    sql: &mut Vec<u8>,
) {
    sql.push(b'(');
    for (k, &c) in columns.iter().enumerate() {
        if k > 0 {
            sql.extend_from_slice(b", ");
        }
        sink.column_value(sql, WriteParam::Value(k), &table.columns[c]);
    }
    sql.push(b')');
}

/// `UPDATE t SET c1 = v1, ... WHERE l1 = x1 AND ...`
pub fn update(table: &TableMeta, columns: &[usize], sink: &mut impl WriteSink, sql: &mut Vec<u8>) {
    update_set(table, columns, sink, sql);
    locator_condition(table, sink, sql);
}

/// `UPDATE t SET c1 = v1, ...`, for a caller that writes its own WHERE.
pub fn update_set(
    table: &TableMeta,
    columns: &[usize],
    sink: &mut impl WriteSink,
    sql: &mut Vec<u8>,
) {
    sql.extend_from_slice(b"UPDATE ");
    sql.extend_from_slice(table.table_sql.as_bytes());
    sql.extend_from_slice(b" SET ");
    for (n, &c) in columns.iter().enumerate() {
        if n > 0 {
            sql.extend_from_slice(b", ");
        }
        sql.extend_from_slice(table.columns[c].name_sql.as_bytes());
        sql.extend_from_slice(b" = ");
        sink.column_value(sql, WriteParam::Value(n), &table.columns[c]);
    }
}

/// `DELETE FROM t WHERE l1 = x1 AND ...`
pub fn delete(table: &TableMeta, sink: &mut impl WriteSink, sql: &mut Vec<u8>) {
    sql.extend_from_slice(b"DELETE FROM ");
    sql.extend_from_slice(table.table_sql.as_bytes());
    locator_condition(table, sink, sql);
}

fn locator_condition(table: &TableMeta, sink: &mut impl WriteSink, sql: &mut Vec<u8>) {
    sql.extend_from_slice(b" WHERE ");
    for (n, l) in table.locator_sql.iter().enumerate() {
        if n > 0 {
            sql.extend_from_slice(b" AND ");
        }
        sql.extend_from_slice(l.as_bytes());
        sql.extend_from_slice(b" = ");
        sink.value(sql, WriteParam::Locator(n));
    }
}
