//! Values between HandlerSocket bytes and the MySQL binary protocol.
//!
//! Going in, every key, filter and written value is bound as a string
//! (MYSQL_TYPE_VAR_STRING in the connection's utf8mb4), so the server converts
//! it to the column's type exactly as it does for a quoted literal in
//! non-strict mode, and compares with the column's own collation. Binary
//! columns take the bytes as they are.
//!
//! Coming out, columns are selected so that they arrive as the server's own
//! text (see `meta::select_sql`); integers, and anything that changed type
//! under an opened index, are turned into the same text here.

use crate::backend::scan_sql::{Param, ScanSql};
use crate::backend::{RowView, Scan};
use mysql::consts::ColumnType;
use mysql::{Column, Row, Value};
use std::fmt::Write;

/// A row's values with every non-NULL value as text bytes.
pub fn normalize_row(row: Row) -> Vec<Value> {
    let columns = row.columns();
    row.unwrap_raw()
        .into_iter()
        .zip(columns.iter())
        .map(|(v, c)| to_text(v.unwrap_or(Value::NULL), c))
        .collect()
}

/// One value as the server's text form (`Bytes`) or `NULL`.
pub fn to_text(v: Value, col: &Column) -> Value {
    let text = match v {
        Value::NULL | Value::Bytes(_) => return v,
        Value::Int(n) => n.to_string(),
        Value::UInt(n) => n.to_string(),
        // Widened to f64 and printed in full: the text parses back to the
        // same double, which compares equal to the stored FLOAT.
        Value::Float(f) => f64::from(f).to_string(),
        Value::Double(d) => d.to_string(),
        Value::Date(y, mo, d, h, mi, s, us) => {
            let mut t = format!("{y:04}-{mo:02}-{d:02}");
            if !matches!(
                col.column_type(),
                ColumnType::MYSQL_TYPE_DATE | ColumnType::MYSQL_TYPE_NEWDATE
            ) {
                let _ = write!(t, " {h:02}:{mi:02}:{s:02}");
                push_fraction(&mut t, us, col.decimals());
            }
            t
        }
        Value::Time(neg, days, h, mi, s, us) => {
            let hours = u64::from(days) * 24 + u64::from(h);
            let mut t = format!("{}{hours:02}:{mi:02}:{s:02}", if neg { "-" } else { "" });
            push_fraction(&mut t, us, col.decimals());
            t
        }
    };
    Value::Bytes(text.into_bytes())
}

fn push_fraction(t: &mut String, us: u32, decimals: u8) {
    if (1..=6).contains(&decimals) {
        let digits = format!("{us:06}");
        t.push('.');
        t.push_str(&digits[..usize::from(decimals)]);
    }
}

/// Bytes (or NULL) as a statement parameter.
pub fn param(v: Option<&[u8]>) -> Value {
    match v {
        Some(b) => Value::Bytes(b.to_vec()),
        None => Value::NULL,
    }
}

/// Appends the parameters of one scan_sql statement for `scan`; `limit`
/// replaces the scan's own row limit (0 for a padding branch).
pub fn bind_scan(scan: &Scan<'_>, sql: &ScanSql, limit: u64, out: &mut Vec<Value>) {
    for p in &sql.params {
        out.push(match *p {
            Param::Key(k) => param(scan.keys[k]),
            Param::Filter(f) => param(scan.filters[f].value.as_deref()),
            Param::Limit => Value::UInt(limit),
        });
    }
}

/// A row of a scan's result: `base` leading columns (a scan number), the
/// opened columns, the filter state if any, then the locator.
pub struct RowRef<'a> {
    pub vals: &'a [Value],
    pub base: usize,
    pub ncols: usize,
    pub has_state: bool,
    pub locator_len: usize,
}

impl RowView for RowRef<'_> {
    fn column(&self, i: usize) -> Option<&[u8]> {
        match self.vals.get(self.base + i) {
            Some(Value::Bytes(b)) => Some(b),
            _ => None,
        }
    }

    fn filter_state(&self) -> i64 {
        if !self.has_state {
            return 0;
        }
        self.vals.get(self.base + self.ncols).map_or(0, as_int)
    }

    fn locator(&self) -> Vec<hs_proto::Value> {
        let start = self.base + self.ncols + usize::from(self.has_state);
        (start..start + self.locator_len)
            .map(|i| match self.vals.get(i) {
                Some(Value::Bytes(b)) => Some(b.clone()),
                _ => None,
            })
            .collect()
    }
}

/// An integer column (scan number, filter state) as a number.
pub fn as_int(v: &Value) -> i64 {
    match v {
        Value::Int(n) => *n,
        Value::UInt(n) => i64::try_from(*n).unwrap_or(i64::MAX),
        Value::Bytes(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(-1),
        _ => -1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(t: ColumnType, decimals: u8) -> Column {
        Column::new(t).with_decimals(decimals)
    }

    fn text(v: Value, c: &Column) -> String {
        match to_text(v, c) {
            Value::Bytes(b) => String::from_utf8(b).unwrap(),
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn temporal_text_matches_the_server() {
        let dt6 = col(ColumnType::MYSQL_TYPE_DATETIME, 6);
        assert_eq!(
            text(Value::Date(2020, 1, 2, 3, 4, 5, 120), &dt6),
            "2020-01-02 03:04:05.000120"
        );
        let dt0 = col(ColumnType::MYSQL_TYPE_DATETIME, 0);
        assert_eq!(
            text(Value::Date(0, 0, 0, 0, 0, 0, 0), &dt0),
            "0000-00-00 00:00:00"
        );
        let d = col(ColumnType::MYSQL_TYPE_DATE, 0);
        assert_eq!(text(Value::Date(2020, 1, 2, 0, 0, 0, 0), &d), "2020-01-02");
        let t3 = col(ColumnType::MYSQL_TYPE_TIME, 3);
        assert_eq!(
            text(Value::Time(true, 34, 22, 59, 59, 500_000), &t3),
            "-838:59:59.500"
        );
    }

    #[test]
    fn numbers_round_trip() {
        let c = col(ColumnType::MYSQL_TYPE_FLOAT, 31);
        assert_eq!(text(Value::Float(1.5), &c), "1.5");
        assert_eq!(text(Value::Float(1.1), &c), "1.100000023841858");
        let c = col(ColumnType::MYSQL_TYPE_LONGLONG, 0);
        assert_eq!(text(Value::UInt(u64::MAX), &c), "18446744073709551615");
        assert_eq!(text(Value::Int(-5), &c), "-5");
    }
}
