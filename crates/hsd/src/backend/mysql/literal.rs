//! Values as SQL literals: as bytes, in a column's character set, and as
//! what storing them into a column of a kind makes of them.

use crate::backend::values::{date_check, is_stored_form, stored_enum, stored_year, DateCheck};
use crate::backend::write_sql::{WriteParam, WriteSink};
use crate::backend::{ColumnKind, ColumnMeta, WriteForm, WriteValue};
use hs_proto::Value as HsValue;
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
/// decimals and dates converted. (Comparing a column with a literal of
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
        ColumnKind::Enum {
            elements,
            case_insensitive,
        } => push_number_i64(sql, stored_enum(v, elements, *case_insensitive)),
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
pub(super) struct WriteLiterals<'a> {
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
            WriteParam::Locator(i) => self.locator.get(i).and_then(|l| l.as_deref()),
        };
        mysql_wire::literal::push_binary(sql, v);
    }

    fn column_value(&mut self, sql: &mut Vec<u8>, param: WriteParam, column: &ColumnMeta) {
        match column.write_form {
            WriteForm::Plain => self.value(sql, param),
            WriteForm::Generated => sql.extend_from_slice(b"DEFAULT"),
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
    }
}
