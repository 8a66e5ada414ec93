//! Row images from `mysql_common` turned into hsd's text form, the form a
//! text query (and so hsd) reads values in. Decoded:
//!
//! - integers (TINYINT to BIGINT, signed and unsigned) as decimal text. The
//!   binlog says whether a column is unsigned only when the server logs
//!   that metadata (MySQL 8 by default; MariaDB with binlog_row_metadata =
//!   MINIMAL or FULL); without it a value with its top bit set could be
//!   either, and is `Undecoded`. Signedness is read here from the table
//!   map, per column, and each value is re-read from its bits at its
//!   column's width: the crate reads a signed MEDIUMINT without sign
//!   extension (-5 as 16777211), and pairs signedness flags with the columns
//!   of the image rather than of the table (a partial image shifts them);
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

/// Whether each column of the table is unsigned: `Some` for the integer
/// columns when the table map carries signedness, `None` otherwise. The
/// flags cover the server's numeric columns in table order, YEAR among
/// them on both servers (`tests/binlog_reader.rs` holds this to SELECT).
pub(super) fn unsigned_columns(tme: &TableMapEvent<'_>) -> Vec<Option<bool>> {
    let flags = tme.iter_optional_meta().find_map(|f| match f {
        Ok(OptionalMetadataField::Signedness(flags)) => Some(flags),
        _ => None,
    });
    let columns = usize::try_from(tme.columns_count()).unwrap_or(0);
    let mut numeric = 0usize;
    (0..columns)
        .map(|i| {
            let raw = tme.get_raw_column_type(i).ok().flatten()?;
            let flagged = matches!(
                raw,
                ColumnType::MYSQL_TYPE_TINY
                    | ColumnType::MYSQL_TYPE_SHORT
                    | ColumnType::MYSQL_TYPE_INT24
                    | ColumnType::MYSQL_TYPE_LONG
                    | ColumnType::MYSQL_TYPE_LONGLONG
                    | ColumnType::MYSQL_TYPE_NEWDECIMAL
                    | ColumnType::MYSQL_TYPE_FLOAT
                    | ColumnType::MYSQL_TYPE_DOUBLE
                    | ColumnType::MYSQL_TYPE_YEAR
            );
            if !flagged {
                return None;
            }
            let k = numeric;
            numeric += 1;
            flags.and_then(|f| f.get(k).map(|b| *b))
        })
        .collect()
}

/// The image of one row: `present` tells which columns the image holds
/// (`row` has a value for each, in order); `unsigned` is the table's
/// (`unsigned_columns`).
pub(super) fn row_cells(
    row: BinlogRow,
    present: impl Iterator<Item = bool>,
    tme: &TableMapEvent<'_>,
    unsigned: &[Option<bool>],
) -> Vec<Cell> {
    let mut values = row.unwrap().into_iter();
    present
        .enumerate()
        .map(|(i, here)| {
            if !here {
                return Cell::Absent;
            }
            let unsigned = unsigned.get(i).copied().flatten();
            match (values.next(), tme.get_column_type(i)) {
                (Some(v), Ok(Some(t))) => cell(t, v, unsigned),
                _ => Cell::Undecoded,
            }
        })
        .collect()
}

/// The width in bits of an integer column type.
fn integer_bits(column_type: ColumnType) -> Option<u32> {
    use ColumnType::*;
    match column_type {
        MYSQL_TYPE_TINY => Some(8),
        MYSQL_TYPE_SHORT => Some(16),
        MYSQL_TYPE_INT24 => Some(24),
        MYSQL_TYPE_LONG => Some(32),
        MYSQL_TYPE_LONGLONG => Some(64),
        _ => None,
    }
}

/// An integer as the server stores it: its low `bits` bits, read as the
/// column's signedness says (`None`: unknown, so a value with the top bit
/// set is `Undecoded`).
fn integer(raw: u64, bits: u32, unsigned: Option<bool>) -> Cell {
    let raw = if bits >= 64 {
        raw
    } else {
        raw & ((1u64 << bits) - 1)
    };
    let top = (raw >> (bits - 1)) & 1 == 1;
    let text = match (unsigned, top) {
        (Some(true), _) | (_, false) => raw.to_string(),
        (Some(false), true) => {
            // Sign extension from `bits`: the two's complement value.
            let shift = 64 - bits;
            (((raw << shift) as i64) >> shift).to_string()
        }
        (None, true) => return Cell::Undecoded,
    };
    Cell::Text(text.into_bytes())
}

fn cell(column_type: ColumnType, value: BinlogValue<'_>, unsigned: Option<bool>) -> Cell {
    use ColumnType::*;
    let BinlogValue::Value(value) = value else {
        return Cell::Undecoded;
    };
    match (integer_bits(column_type), value) {
        (_, Value::NULL) => Cell::Null,
        // The crate's i64 or u64 holds the stored bits at the column's width
        // (sign- or zero-extended, or not at all): re-read from them.
        (Some(bits), Value::Int(v)) => integer(v as u64, bits, unsigned),
        (Some(bits), Value::UInt(v)) => integer(v, bits, unsigned),
        (Some(_), _) => Cell::Undecoded,
        (None, value) => match (column_type, value) {
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
        },
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
        let signed = Some(false);
        assert_eq!(cell(MYSQL_TYPE_LONG, v(Value::Int(-7)), signed), text("-7"));
        assert_eq!(cell(MYSQL_TYPE_LONG, v(Value::Int(7)), None), text("7"));
        assert_eq!(
            cell(MYSQL_TYPE_TINY, v(Value::Int(-56)), None),
            Cell::Undecoded
        );
        assert_eq!(
            cell(MYSQL_TYPE_LONGLONG, v(Value::UInt(u64::MAX)), Some(true)),
            text("18446744073709551615")
        );
        assert_eq!(
            cell(MYSQL_TYPE_VARCHAR, v(Value::Bytes(b"k\xff".to_vec())), None),
            Cell::Text(b"k\xff".to_vec())
        );
        assert_eq!(
            cell(
                MYSQL_TYPE_NEWDATE,
                v(Value::Date(2024, 2, 9, 0, 0, 0, 0)),
                None
            ),
            text("2024-02-09")
        );
        assert_eq!(cell(MYSQL_TYPE_LONG, v(Value::NULL), signed), Cell::Null);
        assert_eq!(
            cell(MYSQL_TYPE_DOUBLE, v(Value::Double(1.5)), None),
            Cell::Undecoded
        );
        assert_eq!(
            cell(MYSQL_TYPE_ENUM, v(Value::Int(1)), None),
            Cell::Undecoded
        );
    }

    /// Every integer width at its edges, as the crate hands the stored bits
    /// over (signed MEDIUMINT zero-extended, the others sign- or
    /// zero-extended), read back as the server's text.
    #[test]
    fn integers_at_every_width_read_as_the_server_stores_them() {
        use ColumnType::*;
        let v = |x| BinlogValue::Value(x);
        let widths = [
            (MYSQL_TYPE_TINY, 8u32),
            (MYSQL_TYPE_SHORT, 16),
            (MYSQL_TYPE_INT24, 24),
            (MYSQL_TYPE_LONG, 32),
            (MYSQL_TYPE_LONGLONG, 64),
        ];
        for (t, bits) in widths {
            let min = -(1i128 << (bits - 1));
            let max = (1i128 << (bits - 1)) - 1;
            let umax = (1i128 << bits) - 1;
            for n in [min, min + 1, -5, -1, 0, 1, max - 1, max] {
                let stored = (n as u128 & umax as u128) as u64;
                let as_crate_sign_extends = Value::Int(n as i64);
                let as_crate_zero_extends = Value::Int(stored as i64);
                for value in [as_crate_sign_extends, as_crate_zero_extends] {
                    assert_eq!(
                        cell(t, v(value.clone()), Some(false)),
                        text(&n.to_string()),
                        "{t:?} signed {n} from {value:?}"
                    );
                }
                if n < 0 {
                    assert_eq!(cell(t, v(Value::Int(n as i64)), None), Cell::Undecoded);
                }
            }
            for n in [0i128, 1, max, max + 1, umax - 1, umax] {
                let stored = n as u64;
                for value in [Value::UInt(stored), Value::Int(stored as i64)] {
                    assert_eq!(
                        cell(t, v(value.clone()), Some(true)),
                        text(&n.to_string()),
                        "{t:?} unsigned {n} from {value:?}"
                    );
                }
            }
        }
    }
}
