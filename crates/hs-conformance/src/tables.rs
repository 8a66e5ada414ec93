//! The tables the suite runs on: one set covering MariaDB's column types and
//! collations (plugin vs hsd on MariaDB), and a small set of integer and text
//! columns that has an equivalent in SQLite (plugin vs hsd's embedded store).

use crate::schema::{Column, Index, Kind, Table};

fn col(name: &'static str, mysql: &'static str, kind: Kind) -> Column {
    Column {
        name,
        mysql,
        sqlite: "",
        kind,
        nullable: !mysql.contains("NOT NULL"),
    }
}

fn lite(name: &'static str, mysql: &'static str, sqlite: &'static str, kind: Kind) -> Column {
    Column {
        name,
        mysql,
        sqlite,
        kind,
        nullable: !mysql.contains("NOT NULL"),
    }
}

fn ix(name: &'static str, parts: &[&'static str], unique: bool) -> Index {
    Index {
        name,
        parts: parts.to_vec(),
        unique,
    }
}

const fn int(bytes: u8, unsigned: bool) -> Kind {
    Kind::Int { bytes, unsigned }
}

type Row = Vec<Option<&'static str>>;

fn rows(data: &[&[Option<&'static str>]]) -> Vec<Row> {
    data.iter().map(|r| r.to_vec()).collect()
}

const N: Option<&str> = None;

/// The collation is always spelt out: MariaDB's default for utf8mb4 is
/// utf8mb4_general_ci, MySQL 8's utf8mb4_0900_ai_ci (which does not pad and
/// folds accents), and the cross-backend run compares the two servers.
const UTF8MB4: &str = "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";

/// The MariaDB tables: every column type the issue lists, NULL and NOT NULL
/// with and without defaults, utf8mb4 case-insensitive and latin1. MySQL 8
/// has every one of these types too (the cross-backend run uses them all).
pub fn mysql_tables() -> Vec<Table> {
    vec![ints(), nums(), times(), strs(), latin(), pairs()]
}

/// The tables of the Vitess run: every table of the MySQL run (each
/// sharded by its key's first column, its AUTO_INCREMENT numbered by a
/// Vitess sequence: `vschema`), and the two of the embedded-store run in
/// MySQL 8's binary collation (MariaDB's `utf8mb4_nopad_bin` is not
/// MySQL's), renamed so as not to meet the MySQL run's tables.
pub fn vitess_tables() -> Vec<Table> {
    let mut items = lite_items();
    items.name = "vitess_items";
    items.mysql_options = "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    let mut pairs = lite_pairs();
    pairs.name = "vitess_pairs";
    pairs.mysql_options = "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin";
    let mut all = mysql_tables();
    all.extend([items, pairs]);
    all
}

/// Tables with an SQLite twin: integers and binary-collated text only.
pub fn lite_tables() -> Vec<Table> {
    vec![lite_items(), lite_pairs()]
}

fn ints() -> Table {
    Table {
        name: "ints",
        columns: vec![
            col("id", "INT NOT NULL AUTO_INCREMENT", int(4, false)),
            col("ti", "TINYINT NULL", int(1, false)),
            col("tu", "TINYINT UNSIGNED NOT NULL DEFAULT 5", int(1, true)),
            col("si", "SMALLINT NULL", int(2, false)),
            col("su", "SMALLINT UNSIGNED NULL", int(2, true)),
            col("mi", "MEDIUMINT NOT NULL", int(3, false)),
            col("mu", "MEDIUMINT UNSIGNED NULL DEFAULT 7", int(3, true)),
            col("ii", "INT NULL", int(4, false)),
            col("iu", "INT UNSIGNED NULL", int(4, true)),
            col("bi", "BIGINT NULL", int(8, false)),
            col("bu", "BIGINT UNSIGNED NULL", int(8, true)),
        ],
        indexes: vec![
            ix("PRIMARY", &["id"], true),
            ix("u_ii", &["ii"], true),
            ix("k_ti", &["ti"], false),
            ix("k_si_bi", &["si", "bi"], false),
            ix("k_bu", &["bu"], false),
        ],
        mysql_options: UTF8MB4,
        seed_rows: rows(&[
            &[
                Some("1"),
                Some("10"),
                Some("1"),
                Some("100"),
                Some("100"),
                Some("1000"),
                Some("1000"),
                Some("10000"),
                Some("10000"),
                Some("100000"),
                Some("100000"),
            ],
            &[
                Some("2"),
                Some("-128"),
                Some("0"),
                Some("-32768"),
                Some("0"),
                Some("-8388608"),
                Some("0"),
                Some("-2147483648"),
                Some("0"),
                Some("-9223372036854775808"),
                Some("0"),
            ],
            &[
                Some("3"),
                Some("127"),
                Some("255"),
                Some("32767"),
                Some("65535"),
                Some("8388607"),
                Some("16777215"),
                Some("2147483647"),
                Some("4294967295"),
                Some("9223372036854775807"),
                Some("18446744073709551615"),
            ],
            &[Some("4"), N, Some("5"), N, N, Some("0"), N, N, N, N, N],
            &[
                Some("5"),
                Some("10"),
                Some("2"),
                Some("100"),
                Some("7"),
                Some("-1"),
                Some("7"),
                Some("-1"),
                Some("7"),
                Some("-1"),
                Some("7"),
            ],
            &[
                Some("6"),
                Some("-1"),
                Some("3"),
                Some("100"),
                N,
                Some("5"),
                Some("8"),
                Some("0"),
                Some("1"),
                Some("100000"),
                Some("100000"),
            ],
            &[
                Some("7"),
                Some("0"),
                Some("4"),
                N,
                Some("9"),
                Some("6"),
                N,
                Some("42"),
                Some("42"),
                N,
                Some("5"),
            ],
            &[
                Some("9"),
                Some("10"),
                Some("5"),
                Some("-5"),
                Some("1"),
                Some("7"),
                Some("1"),
                Some("43"),
                Some("43"),
                Some("-5"),
                Some("9"),
            ],
        ]),
    }
}

fn nums() -> Table {
    Table {
        name: "nums",
        columns: vec![
            col("id", "SMALLINT UNSIGNED NOT NULL", int(2, true)),
            col("de", "DECIMAL(7,2) NULL", Kind::Decimal),
            col("fl", "FLOAT NULL", Kind::Float),
            col("db", "DOUBLE NOT NULL DEFAULT 0", Kind::Double),
            col("yr", "YEAR NULL", Kind::Year),
            // UNSIGNED stores a negative value as 0 (keys and filters too).
            col("du", "DECIMAL(5,1) UNSIGNED NULL", Kind::Decimal),
        ],
        indexes: vec![
            ix("PRIMARY", &["id"], true),
            ix("k_de", &["de"], false),
            ix("k_fl", &["fl"], false),
            ix("k_yr_db", &["yr", "db"], false),
            ix("k_du", &["du"], false),
        ],
        mysql_options: UTF8MB4,
        seed_rows: rows(&[
            &[
                Some("1"),
                Some("1.50"),
                Some("1.5"),
                Some("1.5"),
                Some("2010"),
                Some("0.0"),
            ],
            &[
                Some("2"),
                Some("-3.25"),
                Some("0.1"),
                Some("0.1"),
                Some("1901"),
                Some("1.5"),
            ],
            &[
                Some("3"),
                Some("99999.99"),
                Some("3.14159"),
                Some("3.14159"),
                Some("2155"),
                Some("9999.9"),
            ],
            &[Some("4"), N, N, Some("0"), N, N],
            &[
                Some("5"),
                Some("0.00"),
                Some("-2.5"),
                Some("-2.5"),
                Some("2010"),
                Some("0.0"),
            ],
            &[
                Some("7"),
                Some("1.50"),
                Some("100000"),
                Some("1e100"),
                Some("1999"),
                Some("1.5"),
            ],
            &[
                Some("8"),
                Some("12.34"),
                Some("0"),
                Some("12.34"),
                Some("2010"),
                Some("12.3"),
            ],
        ]),
    }
}

fn times() -> Table {
    Table {
        name: "times",
        columns: vec![
            col(
                "id",
                "BIGINT UNSIGNED NOT NULL AUTO_INCREMENT",
                int(8, true),
            ),
            col("da", "DATE NULL", Kind::Date),
            col(
                "dt",
                "DATETIME NOT NULL DEFAULT '2000-01-01 00:00:00'",
                Kind::DateTime,
            ),
            col("ts", "TIMESTAMP NULL DEFAULT NULL", Kind::Timestamp),
            col("tm", "TIME NULL", Kind::Time),
        ],
        indexes: vec![
            ix("PRIMARY", &["id"], true),
            ix("k_da", &["da"], false),
            ix("k_dt_tm", &["dt", "tm"], false),
            ix("k_ts", &["ts"], false),
        ],
        mysql_options: UTF8MB4,
        seed_rows: rows(&[
            &[
                Some("1"),
                Some("2010-01-02"),
                Some("2010-01-02 03:04:05"),
                Some("2010-01-02 03:04:05"),
                Some("03:04:05"),
            ],
            &[
                Some("2"),
                Some("2010-01-02"),
                Some("2010-01-02 00:00:00"),
                Some("2011-06-07 08:09:10"),
                Some("-01:00:00"),
            ],
            &[
                Some("3"),
                Some("1999-12-31"),
                Some("1999-12-31 23:59:59"),
                N,
                Some("838:59:59"),
            ],
            &[Some("4"), N, Some("2000-01-01 00:00:00"), N, N],
            &[
                Some("5"),
                Some("2038-01-19"),
                Some("2038-01-19 03:14:07"),
                Some("2038-01-19 03:14:07"),
                Some("00:00:00"),
            ],
            &[
                Some("6"),
                Some("1000-01-01"),
                Some("2010-01-02 03:04:05"),
                Some("1970-01-01 00:00:01"),
                Some("12:00:00"),
            ],
        ]),
    }
}

fn strs() -> Table {
    Table {
        name: "strs",
        columns: vec![
            col("id", "INT NOT NULL AUTO_INCREMENT", int(4, false)),
            col("ch", "CHAR(4) NULL", Kind::Char(4)),
            col("vc", "VARCHAR(6) NOT NULL DEFAULT 'dflt'", Kind::VarChar(6)),
            col("bn", "BINARY(4) NULL", Kind::Binary(4)),
            col("vb", "VARBINARY(5) NULL", Kind::VarBinary(5)),
            col("tx", "TEXT NULL", Kind::Text),
            col("bl", "BLOB NULL", Kind::Blob),
            col("en", "ENUM('a','b','c') NULL", Kind::Enum),
        ],
        indexes: vec![
            ix("PRIMARY", &["id"], true),
            ix("u_vc", &["vc"], true),
            ix("k_ch_bn", &["ch", "bn"], false),
            ix("k_vb", &["vb"], false),
            ix("k_tx", &["tx(4)"], false),
            ix("k_en", &["en"], false),
        ],
        mysql_options: UTF8MB4,
        seed_rows: rows(&[
            &[
                Some("1"),
                Some("abc"),
                Some("abc"),
                Some("AB"),
                Some("AB"),
                Some("hello"),
                Some("hello"),
                Some("a"),
            ],
            &[
                Some("2"),
                Some("Abc"),
                Some("Abd"),
                Some("B"),
                Some("b"),
                Some("HELLO"),
                Some("HELLO"),
                Some("b"),
            ],
            &[Some("3"), N, Some(""), N, N, N, N, N],
            &[
                Some("4"),
                Some("zz"),
                Some("zz "),
                Some("zz"),
                Some("zz "),
                Some(""),
                Some(""),
                Some("c"),
            ],
            &[
                Some("5"),
                Some("é"),
                Some("é"),
                Some("x"),
                Some("xy"),
                Some("text five"),
                Some("blob"),
                Some("a"),
            ],
            &[
                Some("6"),
                Some("abc"),
                Some("q"),
                Some("AB"),
                Some("ab"),
                Some("hellO there"),
                Some("b6"),
                N,
            ],
            &[
                Some("8"),
                Some(""),
                Some("dflt"),
                Some(""),
                Some(""),
                Some("t"),
                Some("\u{1}"),
                Some("c"),
            ],
        ]),
    }
}

fn latin() -> Table {
    Table {
        name: "latin",
        columns: vec![
            col("code", "VARCHAR(8) NOT NULL", Kind::VarChar(8)),
            col("name", "CHAR(5) NOT NULL", Kind::Char(5)),
            col("n", "INT NOT NULL DEFAULT 5", int(4, false)),
            col("note", "VARCHAR(10) NULL", Kind::VarChar(10)),
        ],
        indexes: vec![
            ix("PRIMARY", &["code"], true),
            ix("k_name_n", &["name", "n"], false),
        ],
        mysql_options: "DEFAULT CHARSET=latin1 COLLATE=latin1_swedish_ci",
        seed_rows: rows(&[
            &[Some("a"), Some("ann"), Some("1"), Some("first")],
            &[Some("B"), Some("Bob"), Some("2"), N],
            &[Some("c"), Some("ann"), Some("3"), Some("")],
            &[Some("dd"), Some("zed"), Some("-4"), Some("x")],
            &[Some("e e"), Some("ann"), Some("1"), Some("sp")],
            &[Some("f"), Some(""), Some("0"), Some("ÿ")],
        ]),
    }
}

fn pairs() -> Table {
    Table {
        name: "pairs",
        columns: vec![
            col("a", "INT NOT NULL", int(4, false)),
            col("b", "VARCHAR(4) NOT NULL", Kind::VarChar(4)),
            col("v", "INT NULL", int(4, false)),
            col("w", "VARCHAR(8) NULL", Kind::VarChar(8)),
        ],
        indexes: vec![
            ix("PRIMARY", &["a", "b"], true),
            ix("k_v_w", &["v", "w"], false),
        ],
        mysql_options: UTF8MB4,
        seed_rows: rows(&[
            &[Some("1"), Some("a"), Some("10"), Some("x")],
            &[Some("1"), Some("b"), Some("20"), N],
            &[Some("1"), Some("c"), N, Some("y")],
            &[Some("2"), Some("a"), Some("10"), Some("x")],
            &[Some("2"), Some("B"), Some("-5"), Some("z")],
            &[Some("3"), Some(""), Some("0"), Some("")],
            &[Some("5"), Some("a"), Some("10"), Some("w")],
        ]),
    }
}

fn lite_items() -> Table {
    Table {
        name: "lite_items",
        columns: vec![
            lite(
                "id",
                "BIGINT NOT NULL AUTO_INCREMENT",
                "INTEGER PRIMARY KEY AUTOINCREMENT",
                int(8, false),
            ),
            lite(
                "grp",
                "BIGINT NOT NULL DEFAULT 0",
                "INTEGER NOT NULL DEFAULT 0",
                int(8, false),
            ),
            lite("name", "VARCHAR(64) NULL", "TEXT", Kind::VarChar(64)),
            lite("qty", "BIGINT NULL", "INTEGER", int(8, false)),
        ],
        indexes: vec![
            ix("PRIMARY", &["id"], true),
            ix("u_name", &["name"], true),
            ix("k_grp_name", &["grp", "name"], false),
            ix("k_qty", &["qty"], false),
        ],
        mysql_options: "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin",
        seed_rows: rows(&[
            &[Some("1"), Some("1"), Some("apple"), Some("10")],
            &[Some("2"), Some("1"), Some("banana"), Some("20")],
            &[Some("3"), Some("2"), Some("cherry"), N],
            &[Some("4"), Some("2"), N, Some("-5")],
            &[Some("5"), Some("3"), Some("Apple"), Some("10")],
            &[Some("6"), Some("0"), Some(""), Some("0")],
            &[Some("8"), Some("3"), Some("date"), Some("30")],
        ]),
    }
}

fn lite_pairs() -> Table {
    Table {
        name: "lite_pairs",
        columns: vec![
            lite("a", "BIGINT NOT NULL", "INTEGER NOT NULL", int(8, false)),
            lite(
                "b",
                "VARCHAR(16) NOT NULL",
                "TEXT NOT NULL",
                Kind::VarChar(16),
            ),
            lite("v", "BIGINT NULL", "INTEGER", int(8, false)),
        ],
        indexes: vec![ix("PRIMARY", &["a", "b"], true), ix("k_v", &["v"], false)],
        mysql_options: "DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin",
        seed_rows: rows(&[
            &[Some("1"), Some("a"), Some("10")],
            &[Some("1"), Some("b"), Some("20")],
            &[Some("1"), Some("c"), N],
            &[Some("2"), Some("a"), Some("10")],
            &[Some("3"), Some(""), Some("0")],
            &[Some("5"), Some("a"), Some("-10")],
        ]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_rows_have_one_value_per_column() {
        for t in mysql_tables().into_iter().chain(lite_tables()) {
            for r in &t.seed_rows {
                assert_eq!(r.len(), t.columns.len(), "table {}", t.name);
            }
            for ix in &t.indexes {
                for i in 0..ix.parts.len() {
                    assert!(t.column(ix.column(i)).is_some(), "{}.{}", t.name, ix.name);
                }
            }
            assert_eq!(t.indexes[0].name, "PRIMARY");
        }
    }

    #[test]
    fn mysql_tables_spell_out_their_collation() {
        for t in mysql_tables() {
            assert!(t.mysql_options.contains(" COLLATE="), "{}", t.name);
        }
    }

    #[test]
    fn lite_tables_have_sqlite_types() {
        for t in lite_tables() {
            assert!(t.columns.iter().all(|c| !c.sqlite.is_empty()), "{}", t.name);
            assert!(t
                .columns
                .iter()
                .all(|c| c.kind.is_integer() || matches!(c.kind, Kind::VarChar(_))));
        }
    }
}
