//! Values as SQL literals: as bytes, in a column's character set, and as
//! what storing them into a column of a kind makes of them.

use hs_proto::Value as HsValue;
use hsd_storage::floats;
use hsd_storage::values::{
    date_check, is_stored_form, stored_bit, stored_enum, stored_integer, stored_year, DateCheck,
};
use hsd_storage::write_sql::{WriteParam, WriteSink};
use hsd_storage::{ColumnKind, ColumnMeta, LocateForm, TableMeta, WriteForm, WriteValue};
use mysql_wire::literal::push_binary;

/// Appends `value` as a literal in the column's own character set (text) or
/// as bytes (everything else).
pub(super) fn push_literal(sql: &mut Vec<u8>, kind: &ColumnKind, value: Option<&[u8]>) {
    let Some(v) = value else {
        sql.extend_from_slice(b"NULL");
        return;
    };
    match kind {
        ColumnKind::Text { charset, .. } => push_text(sql, charset, v),
        ColumnKind::Other { cast: None, .. } => push_text(sql, "utf8mb4", v),
        _ => push_binary(sql, Some(v)),
    }
}

/// `_<charset>'...'`, or a conversion when the bytes are not text in it.
fn push_text(sql: &mut Vec<u8>, charset: &str, v: &[u8]) {
    if charset.starts_with("utf8") && std::str::from_utf8(v).is_err() {
        // Not text in that charset: convert as the server would.
        sql.extend_from_slice(b"CONVERT(");
        push_binary(sql, Some(v));
        sql.extend_from_slice(b" USING ");
        sql.extend_from_slice(charset.as_bytes());
        sql.push(b')');
        return;
    }
    let at = sql.len();
    push_binary(sql, Some(v));
    // `_binary'...'` becomes `_<charset>'...'`.
    sql.splice(at + 1..at + 7, charset.bytes());
}

/// A temporal value as the column stores it: `CAST(v AS t)`, or the
/// type's zero value (as plain text) where storing fails (no date in it, an
/// invalid date); a TIMESTAMP also turns zero outside its range. Validity is
/// decided here, not by the server: compared with an indexed column, the
/// range optimizer evaluates such a CAST (and anything testing it) with
/// invalid and zero dates allowed.
fn push_temporal(sql: &mut Vec<u8>, cast: &str, zero: &str, timestamp: bool, v: &[u8]) {
    let cast_value = |sql: &mut Vec<u8>| {
        sql.extend_from_slice(b"CAST(");
        push_binary(sql, Some(v));
        sql.extend_from_slice(b" AS ");
        sql.extend_from_slice(cast.as_bytes());
        sql.push(b')');
    };
    let zero_text = |sql: &mut Vec<u8>| push_text(sql, "latin1", zero.as_bytes());
    let invalid = if cast.starts_with("DATE") {
        match date_check(v, cast.starts_with("DATETIME")) {
            DateCheck::Invalid => true,
            // A CAST of a zero date misleads the range optimizer (`<` then
            // finds the zero rows); the text itself, stored into the column
            // there, is what the original stored.
            DateCheck::ZeroInDate if !timestamp => return push_text(sql, "latin1", v),
            _ => false,
        }
    } else {
        // TIME: the server reads any leading number; nothing else stores.
        let t = v.trim_ascii_start();
        !t.strip_prefix(b"-")
            .unwrap_or(t)
            .first()
            .is_some_and(u8::is_ascii_digit)
    };
    if invalid {
        return zero_text(sql);
    }
    if timestamp {
        sql.extend_from_slice(b"(CASE WHEN UNIX_TIMESTAMP(");
        cast_value(sql);
        sql.extend_from_slice(b") BETWEEN 1 AND 2147483647.999999 THEN ");
        cast_value(sql);
        sql.extend_from_slice(b" ELSE ");
        zero_text(sql);
        sql.extend_from_slice(b" END)");
    } else {
        cast_value(sql);
    }
}

/// Appends `value` as what storing it into a column of `kind` makes of it,
/// the way the original compared filter values: integers rounded and
/// clamped to the type, text cut to the column's length, BINARY padded,
/// decimals and dates converted, a FLOAT narrowed to single precision. (Comparing a column with a literal of
/// another type does not do that, and `HANDLER ... WHERE` even compares an
/// INT column with a binary string wrongly.)
pub(super) fn push_stored(sql: &mut Vec<u8>, kind: &ColumnKind, value: Option<&[u8]>) {
    let Some(v) = value else {
        sql.extend_from_slice(b"NULL");
        return;
    };
    match kind {
        ColumnKind::Integer { min, max } => {
            if is_stored_form(kind, v) {
                sql.extend_from_slice(v);
                return;
            }
            sql.extend_from_slice(b"LEAST(GREATEST(CAST(");
            push_binary(sql, Some(v));
            sql.extend_from_slice(format!(" AS DECIMAL(65,0)), {min}), {max})").as_bytes());
        }
        ColumnKind::Text { charset, max_chars } => {
            if is_stored_form(kind, v) {
                push_text(sql, charset, v);
                return;
            }
            sql.extend_from_slice(b"LEFT(");
            push_text(sql, charset, v);
            sql.extend_from_slice(format!(", {max_chars})").as_bytes());
        }
        ColumnKind::Bytes { max_len, fixed } => {
            if is_stored_form(kind, v) {
                push_binary(sql, Some(v));
            } else if *fixed {
                sql.extend_from_slice(b"CAST(");
                push_binary(sql, Some(v));
                sql.extend_from_slice(format!(" AS BINARY({max_len}))").as_bytes());
            } else {
                sql.extend_from_slice(b"LEFT(");
                push_binary(sql, Some(v));
                sql.extend_from_slice(format!(", {max_len})").as_bytes());
            }
        }
        ColumnKind::Temporal {
            cast,
            zero,
            timestamp,
        } => push_temporal(sql, cast, zero, *timestamp, v),
        ColumnKind::Year => push_number_i64(sql, stored_year(v)),
        ColumnKind::Bit { bits } => {
            sql.extend_from_slice(stored_bit(v, *bits).to_string().as_bytes())
        }
        ColumnKind::Enum {
            elements,
            case_insensitive,
        } => push_number_i64(sql, stored_enum(v, elements, *case_insensitive)),
        ColumnKind::Float { scale, unsigned } => {
            // The single-precision value the column would store, written
            // exactly as a double: both servers then compare the column
            // with it alike (MySQL 8's CAST(v AS FLOAT) keeps the double).
            // The same literal as a locator's (`push_locate_value`).
            let stored = f64::from(floats::stored_float(v, *scale, *unsigned));
            let text = format!("{stored:e}");
            let written = push_number_literal(sql, text.as_bytes(), true);
            debug_assert!(written, "{text} is a numeric literal");
        }
        ColumnKind::Other {
            cast: Some(t),
            unsigned,
        } => {
            if *unsigned {
                sql.extend_from_slice(b"GREATEST(");
            }
            sql.extend_from_slice(b"CAST(");
            push_binary(sql, Some(v));
            sql.extend_from_slice(b" AS ");
            sql.extend_from_slice(t.as_bytes());
            sql.push(b')');
            if *unsigned {
                sql.extend_from_slice(b", 0)");
            }
        }
        ColumnKind::Other { cast: None, .. } => push_text(sql, "utf8mb4", v),
    }
}

fn push_number_i64(sql: &mut Vec<u8>, n: i64) {
    sql.extend_from_slice(n.to_string().as_bytes());
}

/// A column compared as text (no CAST).
pub(super) static TEXT_KIND: ColumnKind = ColumnKind::Other {
    cast: None,
    unsigned: false,
};

/// A key value in stored form (see `values::is_stored_form`) of a column of `kind` as a
/// literal: integers as numbers, the rest by kind.
pub(super) fn push_key(sql: &mut Vec<u8>, kind: &ColumnKind, v: Option<&[u8]>) {
    match (kind, v) {
        (ColumnKind::Integer { .. }, Some(digits)) => sql.extend_from_slice(digits),
        _ => push_literal(sql, kind, v),
    }
}

/// Writes a write statement's values as binary literals: the server stores
/// them into the columns as the original stored the bytes it was given.
/// Locator values go back in the form they were read in (`LocateForm`).
pub(super) struct WriteLiterals<'a> {
    pub(super) table: &'a TableMeta,
    pub(super) values: &'a [WriteValue<'a>],
    pub(super) locator: &'a [HsValue],
}

impl WriteSink for WriteLiterals<'_> {
    fn value(&mut self, sql: &mut Vec<u8>, param: WriteParam) {
        let v = match param {
            WriteParam::Value(i) => match self.values.get(i) {
                Some(WriteValue::Int(n)) => {
                    sql.extend_from_slice(n.to_string().as_bytes());
                    return;
                }
                Some(WriteValue::Bytes(v)) => *v,
                None => None,
            },
            WriteParam::Locator(i) => {
                let v = self.locator.get(i).and_then(|l| l.as_deref());
                return push_locate_value(sql, self.table.locator_column(i), v);
            }
        };
        mysql_wire::literal::push_binary(sql, v);
    }

    fn column_value(&mut self, sql: &mut Vec<u8>, param: WriteParam, column: &ColumnMeta) {
        match column.write_form {
            WriteForm::Plain => self.value(sql, param),
            WriteForm::Generated => sql.extend_from_slice(b"DEFAULT"),
            WriteForm::Integer => match (param, &column.kind) {
                (WriteParam::Value(i), ColumnKind::Integer { min, max }) => {
                    match self.values.get(i) {
                        Some(WriteValue::Bytes(Some(b))) => sql.extend_from_slice(
                            stored_integer(b, *min, *max).to_string().as_bytes(),
                        ),
                        _ => self.value(sql, param),
                    }
                }
                _ => self.value(sql, param),
            },
            WriteForm::Json => {
                let v = match param {
                    WriteParam::Value(i) => self.values.get(i),
                    WriteParam::Locator(_) => None,
                };
                match v {
                    Some(WriteValue::Int(n)) => json_text(sql, n.to_string().as_bytes()),
                    Some(WriteValue::Bytes(Some(b))) => json_text(sql, b),
                    _ => self.value(sql, param),
                }
            }
        }
    }
}

/// A locator or position value as it was read (`scan_sql::push_locate_read`)
/// as a literal that compares exactly with its column: a number of a
/// column located by number as a numeric literal (a floating-point one for
/// FLOAT and DOUBLE), anything else as bytes.
pub(super) fn push_locate_value(sql: &mut Vec<u8>, column: Option<&ColumnMeta>, v: Option<&[u8]>) {
    if let (Some(LocateForm::Number { approximate, .. }), Some(text)) =
        (column.map(|c| &c.locate), v)
    {
        if push_number_literal(sql, text, *approximate) {
            return;
        }
    }
    push_binary(sql, v);
}

/// Appends `text` as a numeric literal when it is one (`-12`, `0.50`,
/// `1.0000000200408773e20`); `approximate` makes it floating-point (an
/// exponent is added where there is none: `2.5` is a DECIMAL literal).
/// False, with nothing written, for anything else.
pub(super) fn push_number_literal(sql: &mut Vec<u8>, text: &[u8], approximate: bool) -> bool {
    let body = text.strip_prefix(b"-").unwrap_or(text);
    let (mantissa, exponent) = match body.iter().position(|&b| b == b'e' || b == b'E') {
        Some(e) => (&body[..e], Some(&body[e + 1..])),
        None => (body, None),
    };
    let (int, frac) = match mantissa.iter().position(|&b| b == b'.') {
        Some(d) => (&mantissa[..d], Some(&mantissa[d + 1..])),
        None => (mantissa, None),
    };
    let digits = |d: &[u8]| !d.is_empty() && d.iter().all(u8::is_ascii_digit);
    let valid = digits(int)
        && frac.is_none_or(digits)
        && exponent
            .is_none_or(|e| digits(e.strip_prefix(b"-").or(e.strip_prefix(b"+")).unwrap_or(e)));
    if !valid {
        return false;
    }
    sql.extend_from_slice(text);
    if approximate && exponent.is_none() {
        sql.extend_from_slice(b"e0");
    }
    true
}

/// JSON text as MySQL's JSON type takes it: a string in utf8mb4 (a binary
/// string is refused, 3144), which the server parses (3140 when invalid).
fn json_text(sql: &mut Vec<u8>, text: &[u8]) {
    sql.extend_from_slice(b"CONVERT(");
    push_binary(sql, Some(text));
    sql.extend_from_slice(b" USING utf8mb4)");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_follow_the_column() {
        let mut sql = Vec::new();
        let text = ColumnKind::Text {
            charset: "latin1".into(),
            max_chars: 10,
        };
        push_literal(&mut sql, &text, Some(b"a'b"));
        assert_eq!(sql, b"_latin1'a\\'b'");
        sql.clear();
        let utf = ColumnKind::Text {
            charset: "utf8mb4".into(),
            max_chars: 10,
        };
        push_literal(&mut sql, &utf, Some(b"\xff"));
        assert_eq!(sql, b"CONVERT(_binary'\xff' USING utf8mb4)");
        sql.clear();
        push_literal(&mut sql, &TEXT_KIND, None);
        assert_eq!(sql, b"NULL");
    }

    #[test]
    fn stored_values() {
        let int = ColumnKind::Integer {
            min: -128,
            max: 127,
        };
        let mut sql = Vec::new();
        push_stored(&mut sql, &int, Some(b"12"));
        assert_eq!(sql, b"12");
        sql.clear();
        push_stored(&mut sql, &int, Some(b"1.7"));
        assert_eq!(
            String::from_utf8_lossy(&sql),
            "LEAST(GREATEST(CAST(_binary'1.7' AS DECIMAL(65,0)), -128), 127)"
        );
        sql.clear();
        let bin = ColumnKind::Bytes {
            max_len: 4,
            fixed: true,
        };
        push_stored(&mut sql, &bin, Some(b"B"));
        assert_eq!(sql, b"CAST(_binary'B' AS BINARY(4))");
        sql.clear();
        push_stored(&mut sql, &ColumnKind::Bit { bits: 8 }, Some(b"1"));
        assert_eq!(sql, b"49");
        // FLOAT: the value the column stores, exactly, whatever the text.
        let float = |scale, unsigned| ColumnKind::Float { scale, unsigned };
        for (given, literal) in [
            (&b"3.14159"[..], "3.141590118408203e0"),
            (b"0.1", "1.0000000149011612e-1"),
            (b"1e39", "3.4028234663852886e38"),
            (b" 1.5", "1.5e0"),
            (b"12abc", "1.2e1"),
            (b"-0", "-0e0"),
        ] {
            sql.clear();
            push_stored(&mut sql, &float(None, false), Some(given));
            assert_eq!(String::from_utf8_lossy(&sql), literal);
        }
        sql.clear();
        let m_d = hsd_storage::floats::FloatScale {
            digits: 7,
            decimals: 4,
        };
        push_stored(&mut sql, &float(Some(m_d), true), Some(b"-3"));
        assert_eq!(sql, b"0e0");
        sql.clear();
        push_stored(&mut sql, &float(Some(m_d), false), Some(b"3.14159"));
        assert_eq!(sql, b"3.1415998935699463e0");
        sql.clear();
        push_stored(&mut sql, &float(None, false), None);
        assert_eq!(sql, b"NULL");
    }

    #[test]
    fn locator_values_name_the_stored_value() {
        let lit = |text: &[u8], approximate| {
            let mut sql = Vec::new();
            push_number_literal(&mut sql, text, approximate)
                .then(|| String::from_utf8_lossy(&sql).into_owned())
        };
        assert_eq!(
            lit(b"1.100000023841858", true).as_deref(),
            Some("1.100000023841858e0")
        );
        assert_eq!(
            lit(b"1.0000000200408773e20", true).as_deref(),
            Some("1.0000000200408773e20")
        );
        assert_eq!(
            lit(b"-1.1754900067970481e-38", true).as_deref(),
            Some("-1.1754900067970481e-38")
        );
        assert_eq!(
            lit(b"12345678901234567890", false).as_deref(),
            Some("12345678901234567890")
        );
        assert_eq!(lit(b"-0.50", false).as_deref(), Some("-0.50"));
        for bad in [
            &b""[..],
            b"-",
            b"1.",
            b".5",
            b"1e",
            b"0x1F",
            b"1 OR 1",
            b"1e5e0",
            b"NaN",
        ] {
            assert_eq!(lit(bad, false), None, "{:?}", String::from_utf8_lossy(bad));
        }
        // Anything else goes back as bytes.
        let float = ColumnMeta {
            locate: LocateForm::Number {
                read_sql: None,
                approximate: true,
            },
            ..column()
        };
        let mut sql = Vec::new();
        push_locate_value(&mut sql, Some(&float), Some(b"2.5"));
        assert_eq!(sql, b"2.5e0");
        sql.clear();
        push_locate_value(&mut sql, Some(&float), Some(b"inf'"));
        assert_eq!(sql, b"_binary'inf\\''");
        sql.clear();
        push_locate_value(&mut sql, Some(&column()), Some(b"2.5"));
        assert_eq!(sql, b"_binary'2.5'");
    }

    fn column() -> ColumnMeta {
        ColumnMeta {
            name: "k".into(),
            name_sql: "`k`".into(),
            select_sql: "`k`".into(),
            is_blob: false,
            kind: TEXT_KIND.clone(),
            nullable: false,
            auto_increment: false,
            zero_on_insert: false,
            int_read: hsd_storage::IntRead::Text,
            write_form: WriteForm::Plain,
            locate: LocateForm::Text,
        }
    }
}
