//! A table's columns and indexes from SQLite's catalog, as `TableMeta`.

use super::{quote, refused};
use hsd_storage::{ColumnKind, ColumnMeta, IndexMeta, IntRead, StorageError, TableMeta};
use rusqlite::Connection;

/// SQLite's names for the rowid, in the order hsd tries them.
const ROWID_ALIASES: [&str; 3] = ["rowid", "_rowid_", "oid"];

/// What SQLite makes of a declared type (its affinity rules), for literals
/// and key checks.
fn column_kind(declared: &str) -> ColumnKind {
    let t = declared.to_ascii_uppercase();
    if t.contains("INT") {
        ColumnKind::Integer {
            min: i128::from(i64::MIN),
            max: i128::from(i64::MAX),
        }
    } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
        ColumnKind::Text {
            charset: "utf8".into(),
            max_chars: u64::MAX,
        }
    } else if t.contains("BLOB") || t.is_empty() {
        ColumnKind::Bytes {
            max_len: u64::MAX,
            fixed: false,
        }
    } else {
        ColumnKind::Other {
            cast: None,
            unsigned: false,
        }
    }
}

/// Whether SQLite gives a declared type REAL affinity (its rules: INT
/// first, then CHAR/CLOB/TEXT, then BLOB or nothing, then REAL/FLOA/DOUB).
fn real_affinity(declared: &str) -> bool {
    let t = declared.to_ascii_uppercase();
    let integer = t.contains("INT");
    let text = t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT");
    let blob = t.contains("BLOB") || t.is_empty();
    !integer && !text && !blob && (t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB"))
}

/// A column from `pragma_table_info`: (name, declared type, pk ordinal).
type ColumnRow = (String, String, i64);
/// (NOT NULL, has a default).
type ColumnFlags = (bool, bool);

/// Reads a table's columns and indexes from SQLite's catalog.
pub(super) fn describe_table(
    conn: &Connection,
    db: &str,
    table: &str,
) -> Result<TableMeta, StorageError> {
    let not_found = || StorageError::OpenTable(format!("no table {db}.{table}"));
    let exists: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(refused)?
        > 0;
    if !exists || table.starts_with("sqlite_") {
        return Err(not_found());
    }
    let table_sql = quote(table);

    // (name, declared type, pk ordinal), (NOT NULL, has a default)
    let mut stmt = conn
        .prepare_cached(
            "SELECT name, type, pk, \"notnull\", dflt_value IS NOT NULL \
             FROM pragma_table_info(?1) ORDER BY cid",
        )
        .map_err(refused)?;
    let rows: Vec<(ColumnRow, ColumnFlags)> = stmt
        .query_map([table], |r| {
            Ok((
                (r.get(0)?, r.get(1)?, r.get(2)?),
                (r.get::<_, i64>(3)? != 0, r.get::<_, i64>(4)? != 0),
            ))
        })
        .map_err(refused)?
        .collect::<Result<_, _>>()
        .map_err(refused)?;
    let (cols, flags): (Vec<ColumnRow>, Vec<ColumnFlags>) = rows.into_iter().unzip();
    let pk_count = cols.iter().filter(|(_, _, p)| *p > 0).count();
    // Only a rowid alias declared AUTOINCREMENT is an auto-increment column
    // in the original's sense (an explicit value is answered with id 0, a
    // failed insert uses up its id). A plain INTEGER PRIMARY KEY takes the next
    // rowid when left out and stores an explicit one as given.
    let declared_autoincrement: bool = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?1 \
             AND upper(sql) LIKE '%AUTOINCREMENT%'",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(refused)?
        > 0;
    let mut columns: Vec<ColumnMeta> = cols
        .iter()
        .zip(&flags)
        .map(|((name, ty, pk), &(not_null, has_default))| {
            let kind = column_kind(ty);
            // The rowid alias takes the next id when left out.
            let rowid_alias = *pk > 0 && pk_count == 1 && ty.eq_ignore_ascii_case("INTEGER");
            let auto_increment = rowid_alias && declared_autoincrement;
            ColumnMeta {
                name: name.clone(),
                name_sql: quote(name),
                // REAL answers as its counterpart, MariaDB's DOUBLE, prints
                // (`12345`, not `12345.0`).
                select_sql: if real_affinity(ty) {
                    format!("{}({})", super::double_text::FUNCTION, quote(name))
                } else {
                    format!("CAST({} AS TEXT)", quote(name))
                },
                is_blob: ty.to_ascii_uppercase().contains("BLOB"),
                int_read: if matches!(kind, ColumnKind::Integer { .. }) {
                    IntRead::Integer
                } else {
                    IntRead::Text
                },
                kind,
                // A primary key column is never NULL (as in MariaDB).
                nullable: !not_null && *pk == 0,
                auto_increment,
                // The original's columns left out of an insert hold their
                // zero value unless they have a default; SQLite would store
                // NULL (or refuse a NOT NULL column).
                zero_on_insert: !rowid_alias && !has_default,
                write_form: Default::default(),
                locate: Default::default(),
            }
        })
        .collect();
    let position = |name: &str| cols.iter().position(|(n, _, _)| n == name);

    let without_rowid: bool = conn
        .query_row(
            "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1",
            [table],
            |r| r.get::<_, i64>(0),
        )
        .map_err(refused)?
        != 0;
    // The name that reaches the rowid: a user column called `rowid` shadows
    // that alias (and would make every row look alike), so take the first of
    // SQLite's three aliases no column uses. None when all three are taken.
    let rowid_name: Option<&str> = if without_rowid {
        None
    } else {
        ROWID_ALIASES
            .into_iter()
            .find(|alias| !cols.iter().any(|(n, _, _)| n.eq_ignore_ascii_case(alias)))
    };
    let mut pk: Vec<(i64, String)> = cols
        .iter()
        .filter(|(_, _, p)| *p > 0)
        .map(|(n, _, p)| (*p, n.clone()))
        .collect();
    pk.sort();
    let pk_names: Vec<String> = pk.into_iter().map(|(_, n)| n).collect();
    let pk_cols: Vec<String> = pk_names.iter().map(|n| quote(n)).collect();
    let pk_positions: Vec<Option<usize>> = pk_names.iter().map(|n| position(n)).collect();
    let rowid_alias = !without_rowid
        && pk_cols.len() == 1
        && cols.iter().any(|(n, ty, p)| {
            *p > 0 && ty.eq_ignore_ascii_case("INTEGER") && quote(n) == pk_cols[0]
        });
    if !rowid_alias {
        // Not the rowid after all (WITHOUT ROWID): a plain column.
        for ((c, &(_, has_default)), (_, _, pk)) in columns.iter_mut().zip(&flags).zip(&cols) {
            if *pk > 0 && pk_count == 1 {
                c.auto_increment = false;
                c.zero_on_insert = !has_default;
            }
        }
    }

    // Indexes in creation order: (name, origin, partial).
    let mut stmt = conn
        .prepare_cached(
            "SELECT il.name, il.origin, il.partial, il.\"unique\" FROM pragma_index_list(?1) AS il \
             LEFT JOIN sqlite_schema s ON s.type = 'index' AND s.name = il.name \
             ORDER BY s.rowid, il.seq DESC",
        )
        .map_err(refused)?;
    let index_list: Vec<(String, String, i64, i64)> = stmt
        .query_map([table], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .map_err(refused)?
        .collect::<Result<_, _>>()
        .map_err(refused)?;

    // What orders equal keys of a secondary index: the declared primary
    // key, as InnoDB orders a secondary index by the clustered key (the
    // original's tables); else the rowid.
    let (tiebreak, tiebreak_columns): (Vec<String>, Vec<Option<usize>>) =
        if !pk_cols.is_empty() && !rowid_alias {
            (pk_cols.clone(), pk_positions.clone())
        } else {
            match rowid_name {
                Some(r) => (vec![r.to_string()], vec![None]),
                None if without_rowid => (pk_cols.clone(), pk_positions.clone()),
                None => (Vec::new(), Vec::new()),
            }
        };
    let mut indexes = Vec::new();
    // PRIMARY: the rowid alias, the declared primary key, or the bare rowid.
    let pk_index_name = index_list
        .iter()
        .find(|(_, origin, _, _)| origin == "pk")
        .map(|(n, _, _, _)| n.clone());
    if rowid_alias || without_rowid {
        indexes.push(IndexMeta {
            name: "PRIMARY".into(),
            key_sql: pk_cols.clone(),
            key_columns: pk_positions.clone(),
            key_prefix: Vec::new(),
            tiebreak_sql: Vec::new(),
            tiebreak_columns: Vec::new(),
            from_sql: table_sql.clone(),
            unique: true,
            ordered: true,
            hash: false,
        });
    } else if let (false, Some(pk_name)) = (pk_cols.is_empty(), &pk_index_name) {
        indexes.push(IndexMeta {
            name: "PRIMARY".into(),
            key_sql: pk_cols.clone(),
            key_columns: pk_positions.clone(),
            key_prefix: Vec::new(),
            tiebreak_sql: Vec::new(),
            tiebreak_columns: Vec::new(),
            from_sql: format!("{table_sql} INDEXED BY {}", quote(pk_name)),
            unique: true,
            ordered: true,
            hash: false,
        });
    } else if let Some(r) = rowid_name {
        indexes.push(IndexMeta {
            name: "PRIMARY".into(),
            key_sql: vec![r.to_string()],
            key_columns: vec![None],
            key_prefix: Vec::new(),
            tiebreak_sql: Vec::new(),
            tiebreak_columns: Vec::new(),
            from_sql: table_sql.clone(),
            unique: true,
            ordered: true,
            hash: false,
        });
    }
    for (name, origin, partial, unique) in &index_list {
        if origin == "pk" || *partial != 0 {
            continue;
        }
        let mut stmt = conn
            .prepare_cached("SELECT name FROM pragma_index_info(?1) ORDER BY seqno")
            .map_err(refused)?;
        let key_cols: Vec<Option<String>> = stmt
            .query_map([name], |r| r.get(0))
            .map_err(refused)?
            .collect::<Result<_, _>>()
            .map_err(refused)?;
        // Expression indexes cannot be addressed by column; leave them out.
        let Some(key_names) = key_cols.into_iter().collect::<Option<Vec<_>>>() else {
            continue;
        };
        indexes.push(IndexMeta {
            name: name.clone(),
            key_sql: key_names.iter().map(|c| quote(c)).collect(),
            key_columns: key_names.iter().map(|c| position(c)).collect(),
            key_prefix: Vec::new(),
            tiebreak_sql: tiebreak.clone(),
            tiebreak_columns: tiebreak_columns.clone(),
            from_sql: format!("{table_sql} INDEXED BY {}", quote(name)),
            unique: *unique != 0,
            ordered: true,
            hash: false,
        });
    }
    // How an UPDATE/DELETE finds the row a scan chose: the rowid when it can
    // be named, else the declared primary key; with neither, modify answers
    // an error rather than guess.
    let locator_sql = match rowid_name {
        Some(r) => vec![r.to_string()],
        None => pk_cols,
    };
    Ok(TableMeta {
        db: db.to_string(),
        name: table.to_string(),
        columns,
        indexes,
        locator_sql,
        table_sql,
        // An id is answered only for an AUTOINCREMENT key, hsd's
        // counterpart of AUTO_INCREMENT (the original answered ids for
        // that alone); a plain INTEGER PRIMARY KEY answers `0 1`.
        has_autoincrement: rowid_alias && declared_autoincrement,
        transactional: true,
    })
}
