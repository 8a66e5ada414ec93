//! A REAL value as MariaDB prints a DOUBLE, which is what the original
//! plugin answered for the counterpart column: `12345`, not SQLite's
//! `12345.0`.
//!
//! MariaDB writes the shortest digits that read back as the same double,
//! in fixed notation while the decimal exponent is from -15 to 14
//! (`0.000000000000001`, `123456789012345.6`) and as `<digits>e<exponent>`
//! outside (`1e15`, `1.5e-16`, `1.2345678901234568e17`); zero (also
//! negative zero) is `0`. Checked against MariaDB 10.11's own text for a
//! few thousand random doubles (tests/embedded_answers.rs).
//!
//! hsd's embedded connections get it as the SQL function `hsd_double_text`,
//! which REAL columns are selected through (`meta`); any other value
//! passes through it as `CAST(x AS TEXT)` would give it.

use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Value, ValueRef};
use rusqlite::Connection;

/// The SQL function's name.
pub(crate) const FUNCTION: &str = "hsd_double_text";

/// `x` as MariaDB prints a DOUBLE holding it.
pub(crate) fn double_text(x: f64) -> String {
    if x.is_nan() {
        // SQLite stores NaN as NULL; kept for completeness.
        return "nan".into();
    }
    if x.is_infinite() {
        // No DOUBLE holds these; SQLite's own text.
        return if x > 0.0 { "Inf" } else { "-Inf" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    // Rust writes the shortest round-trip digits too, in both notations.
    let scientific = format!("{x:e}");
    let exponent: i32 = scientific
        .rsplit_once('e')
        .and_then(|(_, e)| e.parse().ok())
        .unwrap_or(0);
    if (-15..15).contains(&exponent) {
        format!("{x}")
    } else {
        scientific
    }
}

/// Registers `hsd_double_text(x)` on a connection.
pub(crate) fn register(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        FUNCTION,
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| {
            Ok(match ctx.get_raw(0) {
                ValueRef::Real(x) => Value::Text(double_text(x)),
                ValueRef::Integer(n) => Value::Text(n.to_string()),
                ValueRef::Text(t) => match std::str::from_utf8(t) {
                    Ok(s) => Value::Text(s.to_string()),
                    // The same bytes, whatever they are.
                    Err(_) => Value::Blob(t.to_vec()),
                },
                ValueRef::Blob(b) => Value::Blob(b.to_vec()),
                ValueRef::Null => Value::Null,
            })
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MariaDB 10.11's text for these DOUBLE values (SELECT of the column).
    #[test]
    fn as_mariadb_prints_a_double() {
        let cases: &[(f64, &str)] = &[
            (12345.0, "12345"),
            (0.0, "0"),
            (-0.0, "0"),
            (100.0, "100"),
            (-12.5, "-12.5"),
            (0.1, "0.1"),
            (123456.789, "123456.789"),
            (1e14, "100000000000000"),
            (1e15, "1e15"),
            (-1e15, "-1e15"),
            (1e16, "1e16"),
            (1e17, "1e17"),
            (123456789012345680.0, "1.2345678901234568e17"),
            (12345678901234567890.0, "1.2345678901234567e19"),
            (9007199254740993.0, "9.007199254740992e15"),
            (123456789012345.0, "123456789012345"),
            (-123456789012345.0, "-123456789012345"),
            (123456789012345.6, "123456789012345.6"),
            (999999999999999.9, "999999999999999.9"),
            (999999999999999.94, "1e15"),
            (12345678901234.5, "12345678901234.5"),
            (1234567890.12345, "1234567890.12345"),
            (0.1234567890123456, "0.1234567890123456"),
            (12345.678901234567, "12345.678901234567"),
            (3.3333333333333333, "3.3333333333333335"),
            (33333.33333333333, "33333.33333333333"),
            (1e-5, "0.00001"),
            (0.0001, "0.0001"),
            (0.000123, "0.000123"),
            (1e-7, "0.0000001"),
            (1.123e-7, "0.0000001123"),
            (4.5e-6, "0.0000045"),
            (1.2345678901234567e-5, "0.000012345678901234568"),
            (1e-10, "0.0000000001"),
            (1.234e-10, "0.0000000001234"),
            (1e-14, "0.00000000000001"),
            (1.5e-12, "0.0000000000015"),
            (1e-15, "0.000000000000001"),
            (-1e-15, "-0.000000000000001"),
            (1.5e-15, "0.0000000000000015"),
            (1.2345678901234567e-15, "0.0000000000000012345678901234568"),
            (9.99e-16, "9.99e-16"),
            (1e-16, "1e-16"),
            (1.5e-16, "1.5e-16"),
            (-1.5e-16, "-1.5e-16"),
            (1e-20, "1e-20"),
            (1e21, "1e21"),
            (1e100, "1e100"),
            (1.5e-100, "1.5e-100"),
            (1.5e300, "1.5e300"),
            (1.7976931348623157e308, "1.7976931348623157e308"),
            (2.2250738585072014e-308, "2.2250738585072014e-308"),
            (2.5e-310, "2.5e-310"),
            (5e-324, "5e-324"),
        ];
        for &(x, want) in cases {
            assert_eq!(double_text(x), want, "{x:e}");
        }
    }

    #[test]
    fn the_sql_function_leaves_other_values_as_text() {
        let conn = Connection::open_in_memory().unwrap();
        register(&conn).unwrap();
        let get = |sql: &str| -> Option<Vec<u8>> {
            conn.query_row(&format!("SELECT {FUNCTION}({sql})"), [], |r| {
                Ok(match r.get_ref(0)? {
                    ValueRef::Null => None,
                    v => Some(v.as_bytes().unwrap().to_vec()),
                })
            })
            .unwrap()
        };
        assert_eq!(get("12345.0").as_deref(), Some(&b"12345"[..]));
        assert_eq!(get("1e15").as_deref(), Some(&b"1e15"[..]));
        assert_eq!(get("7").as_deref(), Some(&b"7"[..]));
        assert_eq!(get("'abc'").as_deref(), Some(&b"abc"[..]));
        assert_eq!(get("x'ff00'").as_deref(), Some(&b"\xff\x00"[..]));
        assert_eq!(get("NULL"), None);
        assert_eq!(get("9e999").as_deref(), Some(&b"Inf"[..]));
    }
}
