//! The INSERT, UPDATE and DELETE statements writes run, shared by every SQL
//! backend: rows are addressed by the table's locator (rowid, primary key or
//! a unique NOT NULL key), values bound as parameters, new values first.

use super::TableMeta;

/// `INSERT INTO t (c1, ...) VALUES (?, ...)`; with no columns the
/// `() VALUES ()` form, which SQLite spells `DEFAULT VALUES` (its caller
/// handles that case).
pub fn insert(table: &TableMeta, columns: &[usize]) -> String {
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| table.columns[c].name_sql.as_str())
        .collect();
    let marks = vec!["?"; columns.len()].join(", ");
    format!(
        "INSERT INTO {} ({}) VALUES ({marks})",
        table.table_sql,
        names.join(", ")
    )
}

/// `UPDATE t SET c1 = ?, ... WHERE l1 = ? AND ...`
pub fn update(table: &TableMeta, columns: &[usize]) -> String {
    let sets: Vec<String> = columns
        .iter()
        .map(|&c| format!("{} = ?", table.columns[c].name_sql))
        .collect();
    format!(
        "UPDATE {} SET {} WHERE {}",
        table.table_sql,
        sets.join(", "),
        locator_condition(table)
    )
}

/// `DELETE FROM t WHERE l1 = ? AND ...`
pub fn delete(table: &TableMeta) -> String {
    format!(
        "DELETE FROM {} WHERE {}",
        table.table_sql,
        locator_condition(table)
    )
}

fn locator_condition(table: &TableMeta) -> String {
    table
        .locator_sql
        .iter()
        .map(|l| format!("{l} = ?"))
        .collect::<Vec<_>>()
        .join(" AND ")
}
