//! The UPDATE and DELETE statements a modify runs, shared by every SQL
//! backend: rows are addressed by the table's locator (rowid, primary key or
//! a unique NOT NULL key), values bound as parameters, new values first.

use super::TableMeta;

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
