//! Values the generator puts into keys, filters, updates and inserts: mostly
//! values the seed rows hold (so requests find rows), plus, per column kind,
//! the edge values that do not fit the column (too long, out of range, wrong
//! type, a datetime for a DATE, trailing spaces, case variants).

use crate::rng::Rng;
use crate::schema::{Kind, Table};

/// How far values may stray from what the column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Range {
    /// Everything: edge values of MariaDB's types included.
    Full,
    /// Only values whose meaning does not depend on the column's SQL type
    /// (the embedded-store comparison): small integers, plain text.
    TypeIndependent,
}

fn edge_values(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Int { .. } => &[
            "0",
            "1",
            "-1",
            "2",
            "10",
            "42",
            "-128",
            "127",
            "128",
            "255",
            "256",
            "-32768",
            "32767",
            "32768",
            "65535",
            "65536",
            "-8388608",
            "8388607",
            "16777215",
            "16777216",
            "2147483647",
            "-2147483648",
            "2147483648",
            "4294967295",
            "4294967296",
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "18446744073709551615",
            "18446744073709551616",
            "99999999999999999999",
            "1.5",
            "2.9",
            "-0.5",
            "1e2",
            " 3",
            "3 ",
            "+4",
            "0x1f",
            "abc",
            "12abc",
            "",
            "-",
        ],
        Kind::Decimal => &[
            "0",
            "1.5",
            "1.50",
            "1.505",
            "-3.25",
            "12.345",
            "99999.99",
            "100000",
            "-99999.995",
            "1e3",
            "abc",
            "",
            " 1.5",
            "12.34",
        ],
        Kind::Float | Kind::Double => &[
            "0",
            "1.5",
            "-2.5",
            "0.1",
            "3.14159",
            "3.1415927",
            "1e10",
            "1e39",
            "1e100",
            "-1e-5",
            "100000",
            "nan",
            "inf",
            "abc",
            "",
            "12.34",
        ],
        Kind::Date => &[
            "2010-01-02",
            "2010-01-02 03:04:05",
            "2010-01-02 23:59:59",
            "20100102",
            "2010-1-2",
            "0000-00-00",
            "2010-02-30",
            "2010-13-01",
            "9999-12-31",
            "1000-01-01",
            "abc",
            "",
            "2010-01-02x",
            "1999-12-31",
        ],
        Kind::DateTime | Kind::Timestamp => &[
            "2010-01-02 03:04:05",
            "2010-01-02",
            "2010-01-02 03:04:05.678",
            "20100102030405",
            "0000-00-00 00:00:00",
            "1970-01-01 00:00:01",
            "2038-01-19 03:14:07",
            "2038-01-19 03:14:08",
            "1999-12-31 23:59:59",
            "2010-01-02 03:04",
            "abc",
            "",
            "2000-01-01 00:00:00",
        ],
        Kind::Time => &[
            "00:00:00",
            "03:04:05",
            "12:34:56",
            "-01:00:00",
            "838:59:59",
            "839:00:00",
            "25:00",
            "123456",
            "1 02:03:04",
            "3:4:5",
            "abc",
            "",
        ],
        Kind::Year => &[
            "2010", "1901", "2155", "2156", "1900", "0", "00", "70", "69", "99", "abc", "", "1999",
        ],
        Kind::Char(_) | Kind::VarChar(_) => &[
            "a",
            "A",
            "ab",
            "abc",
            "ABC",
            "Abc",
            "abc ",
            "abc  ",
            " abc",
            "abcd",
            "abcde",
            "abcdefgh",
            "abcdefghijk",
            "",
            " ",
            "é",
            "É",
            "e",
            "x\ty",
            "\0",
            "zz",
            "zz ",
            "ann",
            "ANN",
            "q\n",
        ],
        Kind::Binary(_) | Kind::VarBinary(_) => &[
            "a", "ab", "AB", "Ab", "AB\0\0", "AB\0", "ab ", "", "\0", "\u{1}", "abcdef", "B",
            "B\0\0\0", "zz", "zz ", "xy",
        ],
        Kind::Text | Kind::Blob => &["t", "hello", "HELLO", "hell", "", "hello ", "blob", "\0"],
        Kind::Enum => &["a", "b", "c", "A", "B", "d", "0", "1", "2", "3", "4", ""],
    }
}

fn type_independent_values(kind: Kind) -> &'static [&'static str] {
    if kind.is_integer() {
        &[
            "0", "1", "-1", "2", "3", "5", "10", "20", "30", "-5", "-10", "100", "7",
        ]
    } else {
        &[
            "a", "b", "c", "apple", "Apple", "banana", "cherry", "date", "", "zzz", "aa", "x\ty",
            "ap",
        ]
    }
}

/// A value for a column of `table`: usually one the seed rows hold, sometimes
/// a variant of one, an edge value of the kind, or NULL.
pub fn value_for(rng: &mut Rng, table: &Table, column: &str, range: Range) -> Option<Vec<u8>> {
    let Some(col) = table.column(column) else {
        return Some(b"1".to_vec());
    };
    let seeds = table.seed_values(column);
    let roll = rng.below(100);
    if roll < 5 {
        return None;
    }
    if roll < 60 && !seeds.is_empty() {
        let v = rng.pick(&seeds).clone();
        if range == Range::Full && col.kind.is_text() && rng.chance(25) {
            return v.map(|b| variant(rng, &b));
        }
        return v;
    }
    let pool = match range {
        Range::Full => edge_values(col.kind),
        Range::TypeIndependent => type_independent_values(col.kind),
    };
    Some(rng.pick(pool).as_bytes().to_vec())
}

/// A number for `+`/`-`: small, negative, huge or not a number at all.
pub fn delta(rng: &mut Rng, range: Range) -> Option<Vec<u8>> {
    let full: &[&str] = &[
        "1",
        "2",
        "0",
        "-1",
        "5",
        "100",
        "-100",
        "1000000",
        "9223372036854775807",
        "3abc",
        "abc",
        "",
        "+2",
        "1.9",
        "-0",
        // More digits than a FLOAT's text shows; 2^24 + 1 and 2^53 + 1,
        // which a FLOAT and a DOUBLE cannot hold.
        "123456789",
        "16777217",
        "9007199254740993",
        // A date or date-time taken down to a few digits, which read back
        // as a date in another shape (101 is 2000-01-01).
        "-20000000",
        "-20100101000000",
    ];
    let lite: &[&str] = &["1", "2", "0", "-1", "5", "100", "-100", "20", "-20"];
    if rng.chance(4) {
        return None;
    }
    let pool = if range == Range::Full { full } else { lite };
    Some(rng.pick(pool).as_bytes().to_vec())
}

/// Case change, trailing space, truncation or extension of a text value.
fn variant(rng: &mut Rng, v: &[u8]) -> Vec<u8> {
    match rng.below(5) {
        0 => v.to_ascii_uppercase(),
        1 => v.to_ascii_lowercase(),
        2 => [v, b" "].concat(),
        3 => v[..v.len().saturating_sub(1)].to_vec(),
        _ => [v, b"xyz"].concat(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tables::{lite_tables, mysql_tables};

    #[test]
    fn type_independent_values_stay_plain() {
        let mut rng = Rng::new(5);
        for t in lite_tables() {
            for c in &t.columns {
                for _ in 0..50 {
                    if let Some(v) = value_for(&mut rng, &t, c.name, Range::TypeIndependent) {
                        if c.kind.is_integer() {
                            let s = String::from_utf8(v).expect("utf8");
                            s.parse::<i64>().expect("integer");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn full_range_reaches_seed_values_and_edges() {
        let mut rng = Rng::new(9);
        let t = &mysql_tables()[0];
        let vals: Vec<_> = (0..400)
            .map(|_| value_for(&mut rng, t, "si", Range::Full))
            .collect();
        assert!(vals.contains(&Some(b"32768".to_vec())));
        assert!(vals.contains(&Some(b"-32768".to_vec())));
        assert!(vals.contains(&None));
    }
}
