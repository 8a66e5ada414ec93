//! Row images from `mysql_common` turned into hsd's text form, the form a
//! text query (and so hsd) reads values in. Decoded:
//!
//! - integers (TINYINT to BIGINT, signed and unsigned) as decimal text. The
//!   binlog says whether a column is unsigned only when the server logs
//!   that metadata (MySQL 8 by default; MariaDB with binlog_row_metadata =
//!   MINIMAL or FULL); without it a value with its top bit set could be
//!   either, and is `Undecoded`;
//! - CHAR, VARCHAR, BINARY, VARBINARY, TEXT and BLOB as their bytes;
//! - DATE as `YYYY-MM-DD`.
//!
//! Everything else (floating point, DECIMAL, time types, YEAR, ENUM, SET,
//! BIT, JSON, geometry) is `Undecoded`: a key on such a column cannot be
//! evicted by value.

use super::Cell;
use mysql_common::binlog::events::{OptionalMetadataField, TableMapEvent};
use mysql_common::binlog::row::BinlogRow;
use mysql_common::binlog::value::BinlogValue;
use mysql_common::constants::ColumnType;
use mysql_common::Value;

/// Whether the table map says which numeric columns are unsigned.
pub(super) fn knows_signedness(tme: &TableMapEvent<'_>) -> bool {
    tme.iter_optional_meta()
        .any(|f| matches!(f, Ok(OptionalMetadataField::Signedness(_))))
}

/// The image of one row: `present` tells which columns the image holds
/// (`row` has a value for each, in order).
pub(super) fn row_cells(
    row: BinlogRow,
    present: impl Iterator<Item = bool>,
    tme: &TableMapEvent<'_>,
    signedness: bool,
) -> Vec<Cell> {
    let mut values = row.unwrap().into_iter();
    present
        .enumerate()
        .map(|(i, here)| {
            if !here {
                return Cell::Absent;
            }
            match (values.next(), tme.get_column_type(i)) {
                (Some(v), Ok(Some(t))) => cell(t, v, signedness),
                _ => Cell::Undecoded,
            }
        })
        .collect()
}

fn cell(column_type: ColumnType, value: BinlogValue<'_>, signedness: bool) -> Cell {
    use ColumnType::*;
    let BinlogValue::Value(value) = value else {
        return Cell::Undecoded;
    };
    match (column_type, value) {
        (_, Value::NULL) => Cell::Null,
        (
            MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG
            | MYSQL_TYPE_LONGLONG,
            Value::Int(v),
        ) => {
            // Without signedness the crate reads every column as signed.
            if v < 0 && !signedness {
                Cell::Undecoded
            } else {
                Cell::Text(v.to_string().into_bytes())
            }
        }
        (
            MYSQL_TYPE_TINY | MYSQL_TYPE_SHORT | MYSQL_TYPE_INT24 | MYSQL_TYPE_LONG
            | MYSQL_TYPE_LONGLONG,
            Value::UInt(v),
        ) => Cell::Text(v.to_string().into_bytes()),
        (
            MYSQL_TYPE_VARCHAR
            | MYSQL_TYPE_VAR_STRING
            | MYSQL_TYPE_STRING
            | MYSQL_TYPE_TINY_BLOB
            | MYSQL_TYPE_MEDIUM_BLOB
            | MYSQL_TYPE_LONG_BLOB
            | MYSQL_TYPE_BLOB,
            Value::Bytes(b),
        ) => Cell::Text(b),
        (MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE, Value::Date(y, m, d, 0, 0, 0, 0)) => {
            Cell::Text(format!("{y:04}-{m:02}-{d:02}").into_bytes())
        }
        _ => Cell::Undecoded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Cell {
        Cell::Text(s.as_bytes().to_vec())
    }

    #[test]
    fn values_in_text_form() {
        use ColumnType::*;
        let v = |x| BinlogValue::Value(x);
        assert_eq!(cell(MYSQL_TYPE_LONG, v(Value::Int(-7)), true), text("-7"));
        assert_eq!(cell(MYSQL_TYPE_LONG, v(Value::Int(7)), false), text("7"));
        assert_eq!(
            cell(MYSQL_TYPE_TINY, v(Value::Int(-56)), false),
            Cell::Undecoded
        );
        assert_eq!(
            cell(MYSQL_TYPE_LONGLONG, v(Value::UInt(u64::MAX)), true),
            text("18446744073709551615")
        );
        assert_eq!(
            cell(MYSQL_TYPE_VARCHAR, v(Value::Bytes(b"k\xff".to_vec())), true),
            Cell::Text(b"k\xff".to_vec())
        );
        assert_eq!(
            cell(
                MYSQL_TYPE_NEWDATE,
                v(Value::Date(2024, 2, 9, 0, 0, 0, 0)),
                true
            ),
            text("2024-02-09")
        );
        assert_eq!(cell(MYSQL_TYPE_LONG, v(Value::NULL), true), Cell::Null);
        assert_eq!(
            cell(MYSQL_TYPE_DOUBLE, v(Value::Double(1.5)), true),
            Cell::Undecoded
        );
        assert_eq!(
            cell(MYSQL_TYPE_ENUM, v(Value::Int(1)), true),
            Cell::Undecoded
        );
    }
}
