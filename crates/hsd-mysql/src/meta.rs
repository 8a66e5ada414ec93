//! `describe` for MySQL/MariaDB: a table's columns from
//! information_schema.COLUMNS and its indexes from SHOW INDEX, turned into the
//! SQL fragments the scans and writes use.
//!
//! Indexes are listed in the server's own key order (what SHOW INDEX shows:
//! PRIMARY first, then unique keys, then the others), so a numeric index in
//! `P` means what it meant to the original plugin.

use super::link::{Answer, Failure, Link, TextTable};
use hsd_storage::floats::FloatScale;
use hsd_storage::{
    ColumnKind, ColumnMeta, IndexMeta, IntRead, LocateForm, StorageError, TableMeta, WriteForm,
};
use mysql_wire::literal::{push_binary, push_identifier};
use mysql_wire::Flavor;

/// An identifier in backticks.
pub(super) fn quote(name: &str) -> String {
    let mut out = Vec::with_capacity(name.len() + 2);
    push_identifier(&mut out, name.as_bytes());
    String::from_utf8_lossy(&out).into_owned()
}

/// Runs one metadata query and keeps its rows.
async fn rows(link: &mut Link, sql: &[u8]) -> Result<TextTable, Failure> {
    link.queue(|out| out.extend_from_slice(sql));
    let mut table = TextTable::default();
    match link.answer(&mut table).await? {
        Answer::Done(_) => Ok(table),
        Answer::Refused(e) => Err(Failure {
            error: super::errors::refused_error(&e),
            link_lost: false,
            retryable: false,
        }),
    }
}

fn open_table(db: &str, table: &str, why: &str) -> Failure {
    Failure {
        error: StorageError::OpenTable(format!("{db}.{table}: {why}")),
        link_lost: false,
        retryable: false,
    }
}

/// BLOB/TEXT-like columns (the original refused filters on them).
pub(super) fn is_blob(data_type: &str) -> bool {
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

/// The column's type family from information_schema's description.
pub(super) fn column_kind(
    data_type: &str,
    column_type: &str,
    charset: Option<&str>,
    max_len: Option<u64>,
    collation: Option<&str>,
) -> ColumnKind {
    let unsigned = column_type.contains("unsigned");
    let bits = match data_type {
        "tinyint" => 8,
        "smallint" => 16,
        "mediumint" => 24,
        "int" | "integer" => 32,
        "bigint" => 64,
        _ => 0,
    };
    if bits > 0 {
        let (min, max) = if unsigned {
            (0, (1i128 << bits) - 1)
        } else {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        };
        return ColumnKind::Integer { min, max };
    }
    // "datetime(6)" -> "(6)".
    let params = column_type
        .find('(')
        .and_then(|i| column_type[i..].find(')').map(|j| &column_type[i..=i + j]))
        .unwrap_or("");
    match data_type {
        "date" => {
            return ColumnKind::Temporal {
                cast: "DATE".into(),
                zero: "0000-00-00",
                timestamp: false,
            }
        }
        "datetime" | "timestamp" => {
            return ColumnKind::Temporal {
                cast: format!("DATETIME{params}"),
                zero: "0000-00-00 00:00:00",
                timestamp: data_type == "timestamp",
            }
        }
        "time" => {
            return ColumnKind::Temporal {
                cast: format!("TIME{params}"),
                zero: "00:00:00",
                timestamp: false,
            }
        }
        "year" => return ColumnKind::Year,
        "float" => {
            return ColumnKind::Float {
                scale: FloatScale::of_column_type(column_type),
                unsigned,
            }
        }
        "bit" => {
            return ColumnKind::Bit {
                bits: bit_width(column_type),
            }
        }
        "enum" => {
            return ColumnKind::Enum {
                elements: type_elements(column_type),
                case_insensitive: collation.is_some_and(|c| c.ends_with("_ci")),
            }
        }
        _ => {}
    }
    match (data_type, charset) {
        ("char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext", Some(cs)) => {
            ColumnKind::Text {
                charset: cs.to_string(),
                max_chars: max_len.unwrap_or(u64::MAX),
            }
        }
        ("binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob", _) => {
            ColumnKind::Bytes {
                max_len: max_len.unwrap_or(u64::MAX),
                fixed: data_type == "binary",
            }
        }
        _ => ColumnKind::Other {
            cast: cast_type(data_type, column_type),
            unsigned,
        },
    }
}

/// The CAST target that turns a value into what storing it in a column of
/// this type makes of it (rounding, clamping, dropping a time part).
fn cast_type(data_type: &str, column_type: &str) -> Option<String> {
    // "decimal(10,2) unsigned" -> "(10,2)"; "datetime(6)" -> "(6)".
    let params = column_type
        .find('(')
        .and_then(|i| column_type[i..].find(')').map(|j| &column_type[i..=i + j]))
        .unwrap_or("");
    match data_type {
        "decimal" => Some(format!("DECIMAL{params}")),
        "double" => Some("DOUBLE".into()),
        _ => None,
    }
}

struct Column {
    name: String,
    data_type: String,
    /// CHARACTER_SET_NAME (None for columns that are not text).
    charset: Option<String>,
    nullable: bool,
    auto_increment: bool,
    kind: ColumnKind,
    zero_on_insert: bool,
    int_read: IntRead,
    write_form: WriteForm,
}

/// A column's default and kind as information_schema.COLUMNS gives them.
struct Defaulted<'a> {
    /// COLUMN_DEFAULT.
    default: Option<&'a str>,
    /// EXTRA, lowercased.
    extra: &'a str,
    nullable: bool,
    auto_increment: bool,
    write_form: WriteForm,
    /// The server is MariaDB (else MySQL).
    flavor: Flavor,
}

/// Whether an insert that leaves the column out stores its type's zero
/// value (the original's rows start from the default row with every NULL
/// flag cleared): when its default is NULL, or an expression the original
/// never evaluated (`current_timestamp()`). A NOT NULL column without a
/// default keeps the server's implicit default (an ENUM's first element),
/// a static default is stored as it is, a generated column is the
/// server's to compute, and a JSON column (MySQL's type, which has no zero
/// value to store) keeps its default.
///
/// The servers write COLUMN_DEFAULT differently. MariaDB: SQL NULL for
/// none, `NULL` for a NULL default, quoted text or a number for a
/// constant, the expression's text otherwise. MySQL: SQL NULL for none or
/// a NULL default, a constant's text unquoted, and an expression marked
/// by `DEFAULT_GENERATED` in EXTRA.
fn zero_on_insert(c: &Defaulted<'_>) -> bool {
    if c.auto_increment || c.write_form != WriteForm::Plain {
        return false;
    }
    match c.default {
        None => c.nullable,
        Some(_) if !c.flavor.is_mariadb() => c.extra.contains("default_generated"),
        Some(d) if d.eq_ignore_ascii_case("NULL") => true,
        Some(d) => {
            let constant = d.starts_with('\'')
                || d.parse::<f64>().is_ok()
                || d.starts_with("b'")
                || d.starts_with("x'");
            !constant
        }
    }
}

/// How values are written into the column: EXTRA names a generated
/// column (`VIRTUAL GENERATED`, `STORED GENERATED`, MariaDB's older
/// `PERSISTENT GENERATED`), which `DEFAULT_GENERATED` (a default
/// expression) is not.
fn write_form(data_type: &str, extra: &str) -> WriteForm {
    let generated = [
        "virtual generated",
        "stored generated",
        "persistent generated",
    ]
    .iter()
    .any(|g| extra.contains(g));
    if generated {
        WriteForm::Generated
    } else if data_type == "json" {
        // Only MySQL says json: MariaDB's JSON is LONGTEXT.
        WriteForm::Json
    } else {
        WriteForm::Plain
    }
}

/// The elements of `enum('a','b')` or `set(...)` as information_schema
/// writes them (quotes doubled inside).
fn type_elements(column_type: &str) -> Vec<Vec<u8>> {
    let Some(open) = column_type.find('(') else {
        return Vec::new();
    };
    let inner = column_type[open + 1..]
        .strip_suffix(')')
        .unwrap_or(&column_type[open + 1..]);
    let bytes = inner.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\'' {
            i += 1;
            continue;
        }
        let mut v = Vec::new();
        i += 1;
        while i < bytes.len() {
            if bytes[i] == b'\'' {
                if bytes.get(i + 1) == Some(&b'\'') {
                    v.push(b'\'');
                    i += 2;
                    continue;
                }
                i += 1;
                break;
            }
            v.push(bytes[i]);
            i += 1;
        }
        out.push(v);
    }
    out
}

/// How a column's value names a row or a place in an index exactly (see
/// `LocateForm`): numbers as numeric literals, a FLOAT read as the double
/// it stores (`1.100000023841858`, where its text says `1.1`), a BIT as
/// its number (its text is raw bytes, which compare as a string). The text
/// of the other types is exactly what they store.
fn locate_form(data_type: &str, name_sql: &str, kind: &ColumnKind) -> LocateForm {
    let number = |read_sql: Option<String>, approximate| LocateForm::Number {
        read_sql,
        approximate,
    };
    match data_type {
        _ if matches!(kind, ColumnKind::Integer { .. }) => number(None, false),
        "decimal" => number(None, false),
        "double" => number(None, true),
        "float" => number(Some(format!("CAST({name_sql} AS DOUBLE)")), true),
        "bit" => number(Some(format!("({name_sql} + 0)")), false),
        _ => LocateForm::Text,
    }
}

/// The width of `bit(n)`.
fn bit_width(column_type: &str) -> u32 {
    column_type
        .trim_start_matches("bit(")
        .trim_end_matches(')')
        .parse()
        .unwrap_or(1)
}

/// What `+`/`-` read a column's value as.
fn int_read(data_type: &str, column_type: &str, kind: &ColumnKind) -> IntRead {
    match data_type {
        _ if matches!(kind, ColumnKind::Integer { .. }) => IntRead::Integer,
        "decimal" => IntRead::Decimal,
        "float" => IntRead::Float,
        "double" => IntRead::Real,
        "date" | "datetime" | "timestamp" | "time" | "year" => IntRead::Temporal,
        "enum" => IntRead::Enum(type_elements(column_type)),
        "set" => IntRead::Set(type_elements(column_type)),
        "bit" => IntRead::Bit(bit_width(column_type)),
        _ => IntRead::Text,
    }
}

/// One index as SHOW INDEX lists it.
struct RawIndex {
    name: String,
    unique: bool,
    /// Column names in index order; None for an expression part.
    columns: Vec<Option<String>>,
    /// (Seq_in_index, column, Sub_part) as listed, while reading SHOW INDEX.
    parts: Vec<(u32, Option<String>, Option<u64>)>,
    /// Each part's prefix length (characters of text, bytes of binary).
    prefixes: Vec<Option<u64>>,
    has_prefix: bool,
    /// FULLTEXT/SPATIAL, or ignored/invisible: not readable in key order
    /// by HANDLER, no FORCE INDEX hint.
    unordered: bool,
    /// Index_type HASH.
    hash: bool,
}

pub(super) async fn describe(link: &mut Link, db: &str, table: &str) -> Result<TableMeta, Failure> {
    // As the server resolves a statement's names: in lower case where it
    // stores them so (`RT`.`T` opens `rt`.`t`, as the original did).
    let lowered;
    let (db, table) = if link.lower_case_names {
        lowered = (db.to_lowercase(), table.to_lowercase());
        (lowered.0.as_str(), lowered.1.as_str())
    } else {
        (db, table)
    };
    let mut filter = Vec::new();
    filter.extend_from_slice(b" WHERE TABLE_SCHEMA = ");
    push_binary(&mut filter, Some(db.as_bytes()));
    filter.extend_from_slice(b" AND TABLE_NAME = ");
    push_binary(&mut filter, Some(table.as_bytes()));
    // information_schema compares names case-insensitively; the names a
    // statement uses are case-sensitive (on Linux), so match exactly here.
    // The engine's TRANSACTIONS says whether a rollback undoes the table's
    // writes (InnoDB: YES; MyISAM, Aria, MEMORY: NO).
    let mut sql = b"SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, (SELECT TRANSACTIONS FROM \
                    information_schema.ENGINES e WHERE e.ENGINE = t.ENGINE) \
                    FROM information_schema.TABLES t"
        .to_vec();
    sql.extend_from_slice(&filter);
    let tables = rows(link, &sql).await?;
    // vtgate sends the query to one shard of keyspace `db` and answers with
    // that shard's own schema name (`vt_ks_-80`): the WHERE chose the
    // schema, the table name alone is compared here.
    let vitess = link.server.is_vitess();
    let ours = |r: &Vec<Option<String>>| {
        (vitess || r[0].as_deref() == Some(db)) && r[1].as_deref() == Some(table)
    };
    let Some((kind, transactional)) = tables.rows.iter().find_map(|r| {
        ours(r).then(|| {
            (
                r[2].clone().unwrap_or_default(),
                r.get(3).cloned().flatten().as_deref() == Some("YES"),
            )
        })
    }) else {
        return Err(open_table(db, table, "no such table (or no access)"));
    };
    if kind != "BASE TABLE" && kind != "SYSTEM VERSIONED" {
        return Err(open_table(db, table, &format!("a {kind} cannot be served")));
    }

    let flavor = link.server.flavor;
    let mut sql = b"SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, IS_NULLABLE, EXTRA, \
                    COLUMN_TYPE, CHARACTER_SET_NAME, CHARACTER_MAXIMUM_LENGTH, COLUMN_DEFAULT, \
                    COLLATION_NAME \
                    FROM information_schema.COLUMNS"
        .to_vec();
    sql.extend_from_slice(&filter);
    sql.extend_from_slice(b" ORDER BY ORDINAL_POSITION");
    let found = rows(link, &sql).await?;
    let columns: Vec<Column> = found
        .rows
        .iter()
        .filter(|r| ours(r))
        .map(|r| {
            let text = |i: usize| r.get(i).cloned().flatten().unwrap_or_default();
            let data_type = text(3).to_ascii_lowercase();
            let column_type = text(6).to_ascii_lowercase();
            let charset = r.get(7).cloned().flatten();
            let max_len = r.get(8).cloned().flatten().and_then(|n| n.parse().ok());
            let default = r.get(9).cloned().flatten();
            let collation = r.get(10).cloned().flatten();
            let nullable = text(4) == "YES";
            let extra = text(5).to_ascii_lowercase();
            let auto_increment = extra.contains("auto_increment");
            let write_form = write_form(&data_type, &extra);
            let kind = column_kind(
                &data_type,
                &column_type,
                charset.as_deref(),
                max_len,
                collation.as_deref(),
            );
            Column {
                name: text(2),
                charset: charset.clone(),
                nullable,
                auto_increment,
                zero_on_insert: zero_on_insert(&Defaulted {
                    default: default.as_deref(),
                    extra: &extra,
                    nullable,
                    auto_increment,
                    write_form,
                    flavor,
                }),
                write_form,
                int_read: int_read(&data_type, &column_type, &kind),
                kind,
                data_type,
            }
        })
        .collect();
    if columns.is_empty() {
        return Err(open_table(db, table, "no columns visible"));
    }

    let table_sql = format!("{}.{}", quote(db), quote(table));
    let raw = show_index(link, &table_sql).await?;

    let not_null = |name: &Option<String>| {
        name.as_ref().is_some_and(|n| {
            columns
                .iter()
                .any(|c| c.name.eq_ignore_ascii_case(n) && !c.nullable)
        })
    };
    let position = |name: &Option<String>| {
        name.as_ref()
            .and_then(|n| columns.iter().position(|c| c.name.eq_ignore_ascii_case(n)))
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
        // A prefix part compares (and orders) the column's first n
        // characters, as the original's key did.
        let key_sql: Vec<String> = if usable {
            names(i)
                .into_iter()
                .zip(&i.prefixes)
                .map(|(c, p)| match p {
                    Some(n) => format!("LEFT({c}, {n})"),
                    None => c,
                })
                .collect()
        } else {
            Vec::new()
        };
        let (tiebreak_sql, tiebreak_columns): (Vec<String>, Vec<Option<usize>>) = match clustered {
            Some(c) if !std::ptr::eq(c, i) => names(c)
                .into_iter()
                .zip(c.columns.iter().map(position))
                .filter(|(pk, _)| !key_sql.contains(pk))
                .unzip(),
            _ => (Vec::new(), Vec::new()),
        };
        let from_sql = if i.unordered {
            table_sql.clone()
        } else if i.name == "PRIMARY" {
            format!("{table_sql} FORCE INDEX (PRIMARY)")
        } else {
            format!("{table_sql} FORCE INDEX ({})", quote(&i.name))
        };
        indexes.push(IndexMeta {
            name: i.name.clone(),
            unique: i.unique && usable,
            key_columns: if usable {
                i.columns.iter().map(position).collect()
            } else {
                Vec::new()
            },
            key_prefix: if usable {
                i.prefixes.clone()
            } else {
                Vec::new()
            },
            key_sql,
            tiebreak_sql,
            tiebreak_columns,
            from_sql,
            ordered: !i.unordered,
            hash: i.hash,
        });
    }

    Ok(TableMeta {
        db: db.to_string(),
        name: table.to_string(),
        has_autoincrement: columns.iter().any(|c| c.auto_increment),
        transactional,
        columns: columns
            .iter()
            .map(|c| {
                let name_sql = quote(&c.name);
                ColumnMeta {
                    // The text protocol returns each value as the server's
                    // own text, as the original's answers were.
                    select_sql: select_sql(&name_sql, c.charset.as_deref(), vitess),
                    is_blob: is_blob(&c.data_type),
                    kind: c.kind.clone(),
                    nullable: c.nullable,
                    auto_increment: c.auto_increment,
                    zero_on_insert: c.zero_on_insert,
                    int_read: c.int_read.clone(),
                    write_form: match c.kind {
                        ColumnKind::Integer { .. }
                            if vitess && c.write_form == WriteForm::Plain =>
                        {
                            WriteForm::Integer
                        }
                        _ => c.write_form,
                    },
                    locate: locate_form(&c.data_type, &name_sql, &c.kind),
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

/// How a column is selected so that its value comes back in the column's
/// own bytes. hsd's session asks for no conversion of results
/// (`character_set_results = NULL`); vtgate accepts that setting but does
/// not apply it (it only checks it against its own), so through it text of
/// another character set than UTF-8 would come back converted to UTF-8:
/// there such a column is selected as BINARY, which converts nothing.
fn select_sql(name_sql: &str, charset: Option<&str>, vitess: bool) -> String {
    let same_in_utf8 = |cs: &str| cs.starts_with("utf8") || cs == "ascii" || cs == "binary";
    match charset {
        Some(cs) if vitess && !same_in_utf8(cs) => format!("CAST({name_sql} AS BINARY)"),
        _ => name_sql.to_string(),
    }
}

async fn show_index(link: &mut Link, table_sql: &str) -> Result<Vec<RawIndex>, Failure> {
    let found = rows(link, format!("SHOW INDEX FROM {table_sql}").as_bytes()).await?;
    let (Some(key_name), Some(non_unique), Some(seq), Some(column)) = (
        found.column("Key_name"),
        found.column("Non_unique"),
        found.column("Seq_in_index"),
        found.column("Column_name"),
    ) else {
        return Err(Failure {
            error: StorageError::Refused {
                code: 1,
                message: "SHOW INDEX: unexpected columns".into(),
            },
            link_lost: false,
            retryable: false,
        });
    };
    let (sub_part, index_type, ignored, visible) = (
        found.column("Sub_part"),
        found.column("Index_type"),
        found.column("Ignored"),
        found.column("Visible"),
    );
    let get = |r: &[Option<String>], i: Option<usize>| i.and_then(|i| r.get(i).cloned().flatten());
    let mut out: Vec<RawIndex> = Vec::new();
    for r in &found.rows {
        let name = get(r, Some(key_name)).unwrap_or_default();
        let pos = match out.iter().position(|i| i.name == name) {
            Some(p) => p,
            None => {
                let kind = get(r, index_type).unwrap_or_default().to_ascii_uppercase();
                let unordered = kind == "FULLTEXT"
                    || kind == "SPATIAL"
                    || kind == "HASH"
                    || get(r, ignored).as_deref() == Some("YES")
                    || get(r, visible).as_deref() == Some("NO");
                out.push(RawIndex {
                    name,
                    unique: get(r, Some(non_unique)).as_deref() == Some("0")
                        && kind != "FULLTEXT"
                        && kind != "SPATIAL",
                    columns: Vec::new(),
                    parts: Vec::new(),
                    prefixes: Vec::new(),
                    has_prefix: false,
                    unordered,
                    hash: kind == "HASH",
                });
                out.len() - 1
            }
        };
        let n: u32 = get(r, Some(seq))
            .and_then(|s| s.parse().ok())
            .unwrap_or(u32::MAX);
        let prefix = get(r, sub_part).and_then(|p| p.parse::<u64>().ok());
        if prefix.is_some() {
            out[pos].has_prefix = true;
        }
        out[pos].parts.push((n, get(r, Some(column)), prefix));
    }
    for i in &mut out {
        let mut parts = std::mem::take(&mut i.parts);
        parts.sort_by_key(|(n, _, _)| *n);
        i.prefixes = parts.iter().map(|(_, _, p)| *p).collect();
        i.columns = parts.into_iter().map(|(_, c, _)| c).collect();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (COLUMN_DEFAULT, EXTRA, nullable, DATA_TYPE) as the server lists them.
    fn zero(flavor: Flavor, default: Option<&str>, extra: &str, nullable: bool, ty: &str) -> bool {
        let extra = extra.to_ascii_lowercase();
        zero_on_insert(&Defaulted {
            default,
            extra: &extra,
            nullable,
            auto_increment: extra.contains("auto_increment"),
            write_form: write_form(ty, &extra),
            flavor,
        })
    }

    #[test]
    fn insert_defaults_and_elements() {
        // MariaDB's COLUMN_DEFAULT.
        assert!(zero(Flavor::MariaDb, Some("NULL"), "", true, "int"));
        assert!(zero(Flavor::MariaDb, None, "", true, "int"));
        assert!(!zero(Flavor::MariaDb, None, "", false, "int"));
        assert!(!zero(Flavor::MariaDb, Some("'dflt'"), "", false, "varchar"));
        assert!(!zero(Flavor::MariaDb, Some("7"), "", true, "int"));
        assert!(zero(
            Flavor::MariaDb,
            Some("current_timestamp()"),
            "",
            false,
            "timestamp"
        ));
        assert!(!zero(Flavor::MariaDb, None, "auto_increment", false, "int"));
        assert!(!zero(
            Flavor::MariaDb,
            None,
            "VIRTUAL GENERATED",
            true,
            "int"
        ));
        assert!(!zero(
            Flavor::MariaDb,
            None,
            "PERSISTENT GENERATED",
            true,
            "int"
        ));
        // MySQL's: constants unquoted, expressions marked in EXTRA.
        assert!(!zero(Flavor::MySql, Some("dflt"), "", false, "varchar"));
        assert!(
            !zero(Flavor::MySql, Some("NULL"), "", true, "varchar"),
            "the text NULL"
        );
        assert!(!zero(Flavor::MySql, Some("0x41"), "", true, "varbinary"));
        assert!(!zero(Flavor::MySql, Some("b'101'"), "", true, "bit"));
        assert!(zero(Flavor::MySql, None, "", true, "int"));
        assert!(!zero(Flavor::MySql, None, "", false, "int"));
        assert!(zero(
            Flavor::MySql,
            Some("CURRENT_TIMESTAMP"),
            "DEFAULT_GENERATED",
            true,
            "timestamp"
        ));
        assert!(zero(
            Flavor::MySql,
            Some("CURRENT_TIMESTAMP(3)"),
            "DEFAULT_GENERATED on update CURRENT_TIMESTAMP(3)",
            true,
            "datetime"
        ));
        assert!(!zero(Flavor::MySql, None, "VIRTUAL GENERATED", true, "int"));
        assert!(!zero(Flavor::MySql, None, "STORED GENERATED", true, "int"));
        // JSON has no zero value to store: its default applies.
        assert!(!zero(Flavor::MySql, None, "", true, "json"));
        assert!(!zero(
            Flavor::MySql,
            Some("_utf8mb4\\'[]\\'"),
            "DEFAULT_GENERATED",
            true,
            "json"
        ));
        assert_eq!(write_form("json", ""), WriteForm::Json);
        assert_eq!(write_form("longtext", ""), WriteForm::Plain);
        assert_eq!(
            write_form("timestamp", "default_generated"),
            WriteForm::Plain
        );
        assert_eq!(
            type_elements("enum('a','b''c','')"),
            vec![b"a".to_vec(), b"b'c".to_vec(), Vec::new()]
        );
    }

    #[test]
    fn quoting_and_kinds() {
        assert_eq!(quote("a`b"), "`a``b`");
        assert!(is_blob("mediumtext") && is_blob("longblob") && is_blob("point"));
        assert!(!is_blob("varchar") && !is_blob("binary"));
        assert_eq!(
            column_kind("tinyint", "tinyint(3) unsigned", None, None, None),
            ColumnKind::Integer { min: 0, max: 255 }
        );
        assert_eq!(
            column_kind("bigint", "bigint(20)", None, None, None),
            ColumnKind::Integer {
                min: i128::from(i64::MIN),
                max: i128::from(i64::MAX)
            }
        );
        assert_eq!(
            column_kind("varchar", "varchar(10)", Some("utf8mb4"), Some(10), None),
            ColumnKind::Text {
                charset: "utf8mb4".into(),
                max_chars: 10
            }
        );
        assert_eq!(
            column_kind("binary", "binary(4)", None, Some(4), None),
            ColumnKind::Bytes {
                max_len: 4,
                fixed: true
            }
        );
        assert_eq!(
            column_kind("date", "date", None, None, None),
            ColumnKind::Temporal {
                cast: "DATE".into(),
                zero: "0000-00-00",
                timestamp: false,
            }
        );
        assert_eq!(
            column_kind("decimal", "decimal(10,2) unsigned", None, None, None),
            ColumnKind::Other {
                cast: Some("DECIMAL(10,2)".into()),
                unsigned: true,
            }
        );
        assert_eq!(
            column_kind(
                "enum",
                "enum('a','b')",
                None,
                None,
                Some("utf8mb4_general_ci")
            ),
            ColumnKind::Enum {
                elements: vec![b"a".to_vec(), b"b".to_vec()],
                case_insensitive: true,
            }
        );
    }
}
