//! `describe` for MySQL/MariaDB: a table's columns from
//! information_schema.COLUMNS and its indexes from SHOW INDEX, turned into the
//! SQL fragments the shared scan builder and the writes use.
//!
//! Indexes are listed in the server's own key order (what SHOW INDEX shows:
//! PRIMARY first, then unique keys, then the others), so a numeric index in
//! `P` means what it meant to the original plugin.

use super::link::{Failure, Link};
use crate::backend::{ColumnMeta, IndexMeta, StorageError, TableMeta};
use mysql::Value;

/// An identifier in backticks.
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

fn text(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::Bytes(b)) => Some(String::from_utf8_lossy(b).into_owned()),
        _ => None,
    }
}

fn open_table(db: &str, table: &str, why: &str) -> Failure {
    Failure {
        error: StorageError::OpenTable(format!("{db}.{table}: {why}")),
        link_lost: false,
        retryable: false,
    }
}

/// How a column is selected so that it arrives as the server's own text.
/// Strings and binary columns come as they are; integers arrive binary and
/// are printed exactly in `values::to_text`; FLOAT/DOUBLE/DECIMAL, temporal
/// types and YEAR are cast by the server, which formats them exactly as
/// `SELECT col` in the mysql client shows them.
pub fn select_sql(name_sql: &str, data_type: &str) -> String {
    match data_type {
        "float" | "double" | "decimal" | "date" | "datetime" | "timestamp" | "time" | "year" => {
            format!("CAST({name_sql} AS CHAR)")
        }
        _ => name_sql.to_string(),
    }
}

/// BLOB/TEXT-like columns (the original refused filters on them).
pub fn is_blob(data_type: &str) -> bool {
    data_type.ends_with("blob")
        || data_type.ends_with("text")
        || matches!(
            data_type,
            "json"
                | "geometry"
                | "point"
                | "linestring"
                | "polygon"
                | "multipoint"
                | "multilinestring"
                | "multipolygon"
                | "geometrycollection"
        )
}

struct Column {
    name: String,
    data_type: String,
    nullable: bool,
    auto_increment: bool,
}

/// One index as SHOW INDEX lists it.
struct RawIndex {
    name: String,
    unique: bool,
    /// Column names in index order; None for an expression part.
    columns: Vec<Option<String>>,
    /// (Seq_in_index, column) as listed, while reading SHOW INDEX.
    parts: Vec<(u32, Option<String>)>,
    has_prefix: bool,
    /// FULLTEXT/SPATIAL, or ignored/invisible: no FORCE INDEX hint.
    no_hint: bool,
}

pub fn describe(link: &mut Link, db: &str, table: &str) -> Result<TableMeta, Failure> {
    let params = || vec![Value::from(db), Value::from(table)];
    // information_schema compares names case-insensitively; the names a
    // statement uses are case-sensitive (on Linux), so match exactly here.
    let tables = link.prepared_rows(
        "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
        params(),
    )?;
    let Some(kind) = tables.iter().find_map(|r| {
        (text(r.first()).as_deref() == Some(db) && text(r.get(1)).as_deref() == Some(table))
            .then(|| text(r.get(2)).unwrap_or_default())
    }) else {
        return Err(open_table(db, table, "no such table (or no access)"));
    };
    if kind != "BASE TABLE" && kind != "SYSTEM VERSIONED" {
        return Err(open_table(db, table, &format!("a {kind} cannot be served")));
    }

    let rows = link.prepared_rows(
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE, EXTRA \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
         ORDER BY ORDINAL_POSITION",
        params(),
    )?;
    let columns: Vec<Column> = rows
        .iter()
        .filter(|r| {
            text(r.first()).as_deref() == Some(db) && text(r.get(1)).as_deref() == Some(table)
        })
        .map(|r| Column {
            name: text(r.get(2)).unwrap_or_default(),
            data_type: text(r.get(3)).unwrap_or_default().to_ascii_lowercase(),
            nullable: text(r.get(4)).as_deref() == Some("YES"),
            auto_increment: text(r.get(5))
                .is_some_and(|e| e.to_ascii_lowercase().contains("auto_increment")),
        })
        .collect();
    if columns.is_empty() {
        return Err(open_table(db, table, "no columns visible"));
    }

    let table_sql = format!("{}.{}", quote(db), quote(table));
    let raw = show_index(link, &table_sql)?;

    let not_null = |name: &Option<String>| {
        name.as_ref().is_some_and(|n| {
            columns
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(n) && !c.nullable)
        })
    };
    let primary = raw.iter().find(|i| i.name == "PRIMARY");
    // InnoDB clusters by the primary key, or else by the first unique key
    // whose columns are all NOT NULL (which the server lists first).
    let clustered: Option<&RawIndex> = primary.or_else(|| {
        raw.first()
            .filter(|i| i.unique && !i.has_prefix && i.columns.iter().all(not_null))
    });
    let locator_index = primary.or_else(|| {
        raw.iter()
            .find(|i| i.unique && i.columns.iter().all(not_null))
    });
    let names = |i: &RawIndex| -> Vec<String> {
        i.columns
            .iter()
            .map(|c| c.as_deref().map(quote).unwrap_or_default())
            .collect()
    };

    let mut indexes = Vec::with_capacity(raw.len());
    for i in &raw {
        let usable = i.columns.iter().all(Option::is_some);
        let key_sql = if usable { names(i) } else { Vec::new() };
        let tiebreak_sql = match clustered {
            Some(c) if !std::ptr::eq(c, i) => names(c)
                .into_iter()
                .filter(|pk| !key_sql.contains(pk))
                .collect(),
            _ => Vec::new(),
        };
        let from_sql = if i.no_hint {
            table_sql.clone()
        } else if i.name == "PRIMARY" {
            format!("{table_sql} FORCE INDEX (PRIMARY)")
        } else {
            format!("{table_sql} FORCE INDEX ({})", quote(&i.name))
        };
        indexes.push(IndexMeta {
            name: i.name.clone(),
            unique: i.unique && usable,
            key_sql,
            tiebreak_sql,
            from_sql,
        });
    }

    Ok(TableMeta {
        db: db.to_string(),
        name: table.to_string(),
        has_autoincrement: columns.iter().any(|c| c.auto_increment),
        columns: columns
            .iter()
            .map(|c| {
                let name_sql = quote(&c.name);
                ColumnMeta {
                    select_sql: select_sql(&name_sql, &c.data_type),
                    is_blob: is_blob(&c.data_type),
                    name: c.name.clone(),
                    name_sql,
                }
            })
            .collect(),
        indexes,
        locator_sql: locator_index.map(names).unwrap_or_default(),
        table_sql,
    })
}

fn show_index(link: &mut Link, table_sql: &str) -> Result<Vec<RawIndex>, Failure> {
    let (names, rows) = link.text_rows(&format!("SHOW INDEX FROM {table_sql}"))?;
    let col = |n: &str| names.iter().position(|c| c.eq_ignore_ascii_case(n));
    let (Some(key_name), Some(non_unique), Some(seq), Some(column)) = (
        col("Key_name"),
        col("Non_unique"),
        col("Seq_in_index"),
        col("Column_name"),
    ) else {
        return Err(Failure::refused(1, "SHOW INDEX: unexpected columns"));
    };
    let (sub_part, index_type, ignored, visible) = (
        col("Sub_part"),
        col("Index_type"),
        col("Ignored"),
        col("Visible"),
    );
    let get = |r: &[Value], i: Option<usize>| i.and_then(|i| text(r.get(i)));
    let mut out: Vec<RawIndex> = Vec::new();
    for r in &rows {
        let name = get(r, Some(key_name)).unwrap_or_default();
        let pos = match out.iter().position(|i| i.name == name) {
            Some(p) => p,
            None => {
                let kind = get(r, index_type).unwrap_or_default().to_ascii_uppercase();
                let no_hint = kind == "FULLTEXT"
                    || kind == "SPATIAL"
                    || get(r, ignored).as_deref() == Some("YES")
                    || get(r, visible).as_deref() == Some("NO");
                out.push(RawIndex {
                    name,
                    unique: get(r, Some(non_unique)).as_deref() == Some("0")
                        && kind != "FULLTEXT"
                        && kind != "SPATIAL",
                    columns: Vec::new(),
                    parts: Vec::new(),
                    has_prefix: false,
                    no_hint,
                });
                out.len() - 1
            }
        };
        let n: u32 = get(r, Some(seq))
            .and_then(|s| s.parse().ok())
            .unwrap_or(u32::MAX);
        if get(r, sub_part).is_some() {
            out[pos].has_prefix = true;
        }
        out[pos].parts.push((n, get(r, Some(column))));
    }
    for i in &mut out {
        let mut parts = std::mem::take(&mut i.parts);
        parts.sort_by_key(|(n, _)| *n);
        i.columns = parts.into_iter().map(|(_, c)| c).collect();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_and_types() {
        assert_eq!(quote("a`b"), "`a``b`");
        assert_eq!(select_sql("`f`", "float"), "CAST(`f` AS CHAR)");
        assert_eq!(select_sql("`s`", "varbinary"), "`s`");
        assert_eq!(select_sql("`i`", "bigint"), "`i`");
        assert!(is_blob("mediumtext") && is_blob("longblob") && is_blob("point"));
        assert!(!is_blob("varchar") && !is_blob("binary"));
    }
}
